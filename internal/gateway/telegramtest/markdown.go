package telegramtest

import (
	"fmt"
	"strings"
)

// ParseMarkdown checks text against Telegram's legacy Markdown parse mode
// as the Bot API documents it (https://core.telegram.org/bots/api#markdown-style):
// *bold*, _italic_, `code`, ```pre```, [text](url); entities do not
// nest; outside entities '_', '*', '`' and '[' are escaped by a preceding
// '\'; inside entities nothing is escaped. An entity left open is the Bot
// API's "can't parse entities: Can't find end of the entity starting at
// byte offset N", returned as that text.
func ParseMarkdown(text string) error {
	bad := func(at int) error {
		return fmt.Errorf("can't parse entities: Can't find end of the entity starting at byte offset %d", at)
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\\' && i+1 < len(text) && strings.IndexByte("_*`[", text[i+1]) >= 0:
			i += 2
		case strings.HasPrefix(text[i:], "```"):
			j := strings.Index(text[i+3:], "```")
			if j < 0 {
				return bad(i)
			}
			i += 3 + j + 3
		case c == '`' || c == '*' || c == '_':
			j := strings.IndexByte(text[i+1:], c)
			if j < 0 {
				return bad(i)
			}
			i += 1 + j + 1
		case c == '[':
			j := strings.IndexByte(text[i+1:], ']')
			if j < 0 {
				return bad(i)
			}
			k := i + 1 + j + 1
			if k < len(text) && text[k] == '(' {
				e := strings.IndexByte(text[k:], ')')
				if e < 0 {
					return bad(i)
				}
				k += e + 1
			}
			i = k
		default:
			i++
		}
	}
	return nil
}
