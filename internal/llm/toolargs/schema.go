package toolargs

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Coerce converts top-level property values of the object args to the
// types the tool's JSON Schema (parameters) declares, where the model sent
// a string standing for the value: a JSON string holding an array or object
// for an array or object property ({"todos":"[{…}]"}), "3" for an integer
// or number, "true"/"false" for a boolean. Other values are left alone for
// the tool to validate. It returns args unchanged when nothing applies, and
// the names of the converted properties.
func Coerce(args string, parameters json.RawMessage) (string, []string) {
	var schema struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if len(parameters) == 0 || json.Unmarshal(parameters, &schema) != nil || len(schema.Properties) == 0 {
		return args, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return args, nil
	}
	var changed []string
	for name, raw := range obj {
		prop, ok := schema.Properties[name]
		if !ok || !strings.HasPrefix(strings.TrimSpace(string(raw)), `"`) {
			continue
		}
		types := schemaTypes(prop.Type)
		if types["string"] {
			continue
		}
		var str string
		if json.Unmarshal(raw, &str) != nil {
			continue
		}
		if v, ok := convert(strings.TrimSpace(str), types); ok {
			obj[name] = v
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return args, nil
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return args, nil
	}
	return string(out), changed
}

// schemaTypes reads a JSON Schema "type": a name or a list of names.
func schemaTypes(raw json.RawMessage) map[string]bool {
	out := map[string]bool{}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		out[one] = true
		return out
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	for _, t := range many {
		out[t] = true
	}
	return out
}

// convert decodes s as a value of one of types, if it is one.
func convert(s string, types map[string]bool) (json.RawMessage, bool) {
	switch {
	case (types["array"] && strings.HasPrefix(s, "[")) || (types["object"] && strings.HasPrefix(s, "{")):
		if json.Valid([]byte(s)) {
			return json.RawMessage(s), true
		}
		if fixed, _ := fixStrings(s); json.Valid([]byte(fixed)) {
			return json.RawMessage(fixed), true
		}
	case types["integer"]:
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return json.RawMessage(s), true
		}
	case types["number"]:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			b, _ := json.Marshal(f)
			return b, true
		}
	case types["boolean"]:
		if s == "true" || s == "false" {
			return json.RawMessage(s), true
		}
	}
	return nil, false
}
