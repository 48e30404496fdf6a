package postgres

import (
	"errors"
	"strings"
	"unicode"
)

// tsQuery translates a search query in the syntax store.SearchOptions
// documents (SQLite FTS5's: words, "phrases", AND, OR, NOT, prefix*,
// NEAR(a b, n), parentheses, column filters content:, tool_name:,
// tool_args:) into to_tsquery text over the fts column. Words are split
// at anything that is not a letter or digit, as FTS5's unicode61 splits
// them, so payments-api and config.yaml become phrases of their parts;
// columns become weights (content A, tool_name B, tool_args C). NEAR
// groups need all their phrases in the message (the distance is not
// checked). FTS5's precedence holds: NOT binds tighter than AND, AND
// than OR. A malformed query is an error saying what is wrong.
func tsQuery(q string) (string, error) {
	p := &queryParser{toks: lexQuery(q)}
	if p.err != nil {
		return "", p.err
	}
	out, err := p.or()
	if err != nil {
		return "", err
	}
	if p.pos < len(p.toks) {
		return "", errors.New("syntax error near " + p.toks[p.pos].text)
	}
	return out, nil
}

type queryToken struct {
	kind byte // 'w' word, 'p' phrase, '(' ')', ',' or 'o' operator
	text string
}

func lexQuery(q string) []queryToken {
	var toks []queryToken
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',':
			toks = append(toks, queryToken{kind: c, text: string(c)})
			i++
		case c == '"':
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				toks = append(toks, queryToken{kind: 'u', text: q[i:]})
				return toks
			}
			text := q[i+1 : i+1+end]
			i += end + 2
			if i < len(q) && q[i] == '*' {
				text += "*"
				i++
			}
			toks = append(toks, queryToken{kind: 'p', text: text})
		default:
			j := i
			for j < len(q) && strings.IndexByte(" \t\n\r()\",", q[j]) < 0 {
				j++
			}
			w := q[i:j]
			i = j
			switch w {
			case "AND", "OR", "NOT", "NEAR":
				toks = append(toks, queryToken{kind: 'o', text: w})
				continue
			}
			if strings.HasSuffix(w, ":") && i < len(q) && q[i] == '"' { // tool_args:"a b"
				toks = append(toks, queryToken{kind: 'c', text: strings.TrimSuffix(w, ":")})
				continue
			}
			toks = append(toks, queryToken{kind: 'w', text: w})
		}
	}
	return toks
}

type queryParser struct {
	toks []queryToken
	pos  int
	err  error
}

func (p *queryParser) peek() (queryToken, bool) {
	if p.pos < len(p.toks) {
		return p.toks[p.pos], true
	}
	return queryToken{}, false
}

func (p *queryParser) or() (string, error) {
	left, err := p.and()
	if err != nil {
		return "", err
	}
	for {
		t, ok := p.peek()
		if !ok || t.kind != 'o' || t.text != "OR" {
			return left, nil
		}
		p.pos++
		right, err := p.and()
		if err != nil {
			return "", err
		}
		left = "(" + left + " | " + right + ")"
	}
}

func (p *queryParser) and() (string, error) {
	left, err := p.not()
	if err != nil {
		return "", err
	}
	for {
		t, ok := p.peek()
		if !ok || t.kind == ')' || t.kind == ',' || (t.kind == 'o' && (t.text == "OR" || t.text == "NOT")) {
			return left, nil
		}
		if t.kind == 'o' && t.text == "AND" {
			p.pos++
		}
		right, err := p.not()
		if err != nil {
			return "", err
		}
		left = left + " & " + right
	}
}

func (p *queryParser) not() (string, error) {
	left, err := p.primary("")
	if err != nil {
		return "", err
	}
	for {
		t, ok := p.peek()
		if !ok || t.kind != 'o' || t.text != "NOT" {
			return left, nil
		}
		p.pos++
		right, err := p.primary("")
		if err != nil {
			return "", err
		}
		left = "(" + left + " & !" + right + ")"
	}
}

// columnWeights maps FTS5 column filters to the fts column's weights.
var columnWeights = map[string]string{"content": "A", "tool_name": "B", "tool_args": "C"}

func (p *queryParser) primary(weight string) (string, error) {
	t, ok := p.peek()
	if !ok {
		return "", errors.New("incomplete query")
	}
	p.pos++
	switch t.kind {
	case 'u':
		return "", errors.New("unterminated string")
	case '(':
		inner, err := p.or()
		if err != nil {
			return "", err
		}
		if c, ok := p.peek(); !ok || c.kind != ')' {
			return "", errors.New("unclosed parenthesis")
		}
		p.pos++
		return inner, nil
	case 'p':
		return phraseQuery(t.text, weight)
	case 'c':
		w, ok := columnWeights[t.text]
		if !ok {
			return "", errors.New("no such column: " + t.text)
		}
		return p.primary(w)
	case 'o':
		if t.text == "NEAR" {
			return p.near(weight)
		}
		return "", errors.New("syntax error near " + t.text)
	case 'w':
		w := t.text
		if k := strings.IndexByte(w, ':'); k > 0 {
			col, ok := columnWeights[w[:k]]
			if !ok {
				return "", errors.New("no such column: " + w[:k])
			}
			weight, w = col, w[k+1:]
		}
		return phraseQuery(strings.TrimLeft(w, "^+"), weight)
	}
	return "", errors.New("syntax error near " + t.text)
}

// near reads NEAR(phrase phrase ..., n) as all of its phrases.
func (p *queryParser) near(weight string) (string, error) {
	if t, ok := p.peek(); !ok || t.kind != '(' {
		return "", errors.New("NEAR needs (phrases)")
	}
	p.pos++
	var parts []string
	for {
		t, ok := p.peek()
		if !ok {
			return "", errors.New("unclosed NEAR(")
		}
		p.pos++
		switch t.kind {
		case ')':
			if len(parts) == 0 {
				return "", errors.New("empty NEAR()")
			}
			return "(" + strings.Join(parts, " & ") + ")", nil
		case ',':
			if n, ok := p.peek(); ok && n.kind == 'w' {
				p.pos++ // the distance
			}
		case 'w', 'p':
			q, err := phraseQuery(t.text, weight)
			if err != nil {
				return "", err
			}
			parts = append(parts, q)
		default:
			return "", errors.New("syntax error in NEAR near " + t.text)
		}
	}
}

// phraseQuery is the tsquery of one word or phrase: its letter-and-digit
// runs in a row (<->), the last a prefix when text ends in *.
func phraseQuery(text, weight string) (string, error) {
	prefix := strings.HasSuffix(text, "*")
	text = strings.TrimSuffix(text, "*")
	parts := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(parts) == 0 {
		return "", errors.New("no word in " + `"` + text + `"`)
	}
	for i, w := range parts {
		label := weight
		if prefix && i == len(parts)-1 {
			label = "*" + weight
		}
		parts[i] = "'" + strings.ToLower(w) + "'"
		if label != "" {
			parts[i] += ":" + label
		}
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return "(" + strings.Join(parts, " <-> ") + ")", nil
}
