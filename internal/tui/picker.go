package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// pickItem is one choice of a picker.
type pickItem struct{ value, label string }

// picker is a list to choose from (/model, /sessions): ↑/↓ move, Enter
// chooses, Esc closes; a filterable picker narrows the list as you type.
type picker struct {
	title      string
	items      []pickItem
	sel        int
	filter     string
	filterable bool
	choose     func(value string) tea.Cmd
}

// pickerRows is how many items a picker shows at once.
const pickerRows = 8

func (p *picker) visible() []pickItem {
	if p.filter == "" {
		return p.items
	}
	var out []pickItem
	for _, it := range p.items {
		if strings.Contains(strings.ToLower(it.label), strings.ToLower(p.filter)) {
			out = append(out, it)
		}
	}
	return out
}

func (m *Model) onPickerKey(key string) tea.Cmd {
	p := m.picker
	items := p.visible()
	switch key {
	case "esc":
		m.picker = nil
	case "up":
		if p.sel > 0 {
			p.sel--
		}
	case "down":
		if p.sel < len(items)-1 {
			p.sel++
		}
	case "enter":
		m.picker = nil
		if len(items) == 0 {
			if p.filterable && p.filter != "" {
				return p.choose(p.filter) // a name that is not listed
			}
			return nil
		}
		return p.choose(items[min(p.sel, len(items)-1)].value)
	case "backspace":
		if p.filter != "" {
			p.filter = p.filter[:len(p.filter)-1]
			p.sel = 0
		}
	default:
		if p.filterable && len([]rune(key)) == 1 {
			p.filter += key
			p.sel = 0
		}
	}
	return nil
}

func (p *picker) view(m *Model) string {
	items := p.visible()
	lines := []string{m.styles.user.Render(p.title)}
	if p.filterable {
		lines = append(lines, "filter: "+p.filter)
	}
	start := 0
	if p.sel >= pickerRows {
		start = p.sel - pickerRows + 1
	}
	for i := start; i < len(items) && i < start+pickerRows; i++ {
		label := preview(items[i].label, m.width-4)
		if i == p.sel {
			lines = append(lines, m.styles.user.Render("▸ "+label))
		} else {
			lines = append(lines, "  "+label)
		}
	}
	if len(items) == 0 {
		lines = append(lines, m.styles.dim.Render("  (no match: Enter uses what you typed)"))
	}
	return strings.Join(lines, "\n")
}
