package tool

import "testing"

func TestCheckToolsets(t *testing.T) {
	r := NewRegistry(NewTodoList())
	unknown, unavailable := r.CheckToolsets([]string{"todo", "all", "vision", "bogus", "todo_list"})
	if len(unknown) != 2 || unknown[0] != "bogus" || unknown[1] != "todo_list" {
		t.Errorf("unknown = %v, want [bogus todo_list]", unknown)
	}
	if len(unavailable) != 1 || unavailable[0] != "vision" {
		t.Errorf("unavailable = %v, want [vision]", unavailable)
	}
}
