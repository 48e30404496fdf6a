package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// DefaultSnapshotChars caps a snapshot shown to the model.
const DefaultSnapshotChars = 20000

// refs gives DOM nodes stable names (@e1, @e2...) for the life of a page:
// the same element keeps its ref in every snapshot until the tab navigates
// (browser_navigate, browser_back), so refs from an earlier snapshot stay
// valid for clicks and typing.
type refs struct {
	byNode map[cdp.BackendNodeID]string
	byRef  map[string]cdp.BackendNodeID
	next   int
}

func newRefs() *refs {
	r := &refs{}
	r.reset()
	return r
}

func (r *refs) reset() {
	r.byNode, r.byRef, r.next = map[cdp.BackendNodeID]string{}, map[string]cdp.BackendNodeID{}, 0
}

func (r *refs) ref(id cdp.BackendNodeID) string {
	if s, ok := r.byNode[id]; ok {
		return s
	}
	r.next++
	s := "@e" + strconv.Itoa(r.next)
	r.byNode[id], r.byRef[s] = s, id
	return s
}

func (r *refs) lookup(ref string) (cdp.BackendNodeID, bool) {
	ref = strings.TrimSpace(ref)
	if !strings.HasPrefix(ref, "@") {
		ref = "@" + ref
	}
	id, ok := r.byRef[ref]
	return id, ok
}

// interactive roles get a ref in the compact snapshot.
var interactive = map[string]bool{
	"link": true, "button": true, "textbox": true, "searchbox": true, "checkbox": true, "radio": true,
	"combobox": true, "listbox": true, "option": true, "menuitem": true, "menuitemcheckbox": true,
	"menuitemradio": true, "tab": true, "switch": true, "slider": true, "spinbutton": true, "treeitem": true,
}

// structural roles are kept in the compact snapshot even without a name.
var structural = map[string]bool{
	"heading": true, "list": true, "listitem": true, "form": true, "table": true, "row": true,
	"cell": true, "img": true, "image": true, "navigation": true, "main": true, "dialog": true,
	"alert": true, "paragraph": true, "article": true,
}

// snapshot renders the AX tree as indented lines: `- role "name" [@eN]`.
func snapshot(ctx context.Context, t *chromedp.Target, r *refs, full bool) (string, error) {
	res, err := cdp.Call(ctx, t, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return "", err
	}
	byID := map[accessibility.NodeID]*accessibility.Node{}
	for _, n := range res.Nodes {
		byID[n.NodeID] = n
	}
	var sb strings.Builder
	var walk func(n *accessibility.Node, depth int)
	walk = func(n *accessibility.Node, depth int) {
		role, name := axString(n.Role), strings.Join(strings.Fields(axString(n.Name)), " ")
		show := !n.Ignored && role != "" && role != "none" && role != "RootWebArea"
		if show && !full {
			show = interactive[role] || structural[role] || (role == "StaticText" && name != "")
			if role == "StaticText" && n.ParentID != "" {
				// Text already named by its parent (a link, a button) is noise.
				if p := byID[n.ParentID]; p != nil && strings.Join(strings.Fields(axString(p.Name)), " ") == name {
					show = false
				}
			}
		}
		if show {
			sb.WriteString(strings.Repeat("  ", depth))
			sb.WriteString("- ")
			if role == "StaticText" {
				sb.WriteString("text")
			} else {
				sb.WriteString(role)
			}
			if name != "" {
				sb.WriteString(" " + strconv.Quote(truncate(name, 200)))
			}
			if v := axString(n.Value); v != "" && role != "StaticText" {
				sb.WriteString(" value=" + strconv.Quote(truncate(v, 200)))
			}
			if n.BackendDOMNodeID != 0 && (interactive[role] || full) {
				sb.WriteString(" [" + r.ref(n.BackendDOMNodeID) + "]")
			}
			sb.WriteString("\n")
			depth++
		}
		for _, c := range n.ChildIDs {
			if cn := byID[c]; cn != nil {
				walk(cn, depth)
			}
		}
	}
	for _, n := range res.Nodes {
		if n.ParentID == "" {
			walk(n, 0)
		}
	}
	if sb.Len() == 0 {
		return "(the page has no accessible content)", nil
	}
	return sb.String(), nil
}

// axString reads a string-valued AX value.
func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s any
	if err := json.Unmarshal(v.Value, &s); err != nil {
		return ""
	}
	switch x := s.(type) {
	case string:
		return x
	case float64, bool:
		return fmt.Sprint(x)
	}
	return ""
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// capText keeps the head and the tail of s within max characters, with a
// marker saying how much was left out.
func capText(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	head, tail := max*2/3, max/3
	for head > 0 && !isBoundary(s, head) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !isBoundary(s, start) {
		start++
	}
	return fmt.Sprintf("%s\n[... %d characters omitted; use browser_scroll or a narrower page to see the middle ...]\n%s",
		s[:head], start-head, s[start:])
}

func isBoundary(s string, i int) bool { return i == 0 || i == len(s) || (s[i]&0xC0) != 0x80 }
