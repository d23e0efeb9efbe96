package main

// The schema compiled once into a tree of checks, as ajv compiles it into
// JavaScript: what a performance-minded Go service does instead of
// interpreting the schema per request (VALIDATOR=compiled, the default; the
// interpreting library is VALIDATOR=jsonschema, schema.go). It reads the same
// exported schema, supports the keywords the gateway's schema uses and
// refuses any other at start (ajv's strict mode), and reports ajv's errors in
// ajv's order: per subschema a type error with no keyword of its type up
// front, then const and enum, then the number, string, array and object
// keywords, the type error of a single type with keywords of its own in its
// group's place, properties in schema order, items by index.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

type check struct {
	types      []string
	xError     string
	hasConst   bool
	constValue any
	enum       []any
	minimum    *float64
	maximum    *float64
	minLength  *int
	pattern    jsPattern
	hasPattern bool
	format     func(string) bool
	formatName string
	minItems   *int
	maxItems   *int
	items      *check
	required   []string
	props      []prop
	// typeGroup is the group whose place the type error takes ("" = up front).
	typeGroup string
}

type prop struct {
	name  string
	check *check
}

// CompiledValidator validates with the compiled tree.
type CompiledValidator struct{ root *check }

var formatChecks = map[string]func(string) bool{"date-time": isAjvDateTime, "iso-date-time": isIsoDateTimeWithZone}

var keywordGroup = map[string]string{
	"minimum": "number", "maximum": "number",
	"minLength": "string", "pattern": "string",
	"minItems": "array", "maxItems": "array", "items": "array",
	"required": "object", "properties": "object",
}

func newCompiledValidator(source json.RawMessage) (*CompiledValidator, error) {
	dec := json.NewDecoder(bytes.NewReader(source))
	dec.UseNumber()
	v, err := readOrdered(dec)
	if err != nil {
		return nil, err
	}
	root, err := compileCheck(v, "#")
	if err != nil {
		return nil, err
	}
	return &CompiledValidator{root}, nil
}

func compileCheck(v any, at string) (*check, error) {
	obj, ok := v.(*jsObject)
	if !ok {
		return nil, fmt.Errorf("%s: a schema must be an object", at)
	}
	c := &check{}
	groups := map[string]bool{}
	for _, k := range obj.keys {
		val := obj.values[k]
		where := at + "/" + k
		if g := keywordGroup[k]; g != "" {
			groups[g] = true
		}
		var err error
		switch k {
		case "$id", "title", "description", "$comment":
		case "x-error":
			if c.xError, ok = val.(string); !ok {
				err = fmt.Errorf("%s must be a string", where)
			}
		case "type":
			c.types, err = stringList(val, where)
		case "const":
			c.hasConst, c.constValue = true, plain(val)
		case "enum":
			list, isList := val.([]any)
			if !isList {
				err = fmt.Errorf("%s must be an array", where)
			}
			for _, e := range list {
				c.enum = append(c.enum, plain(e))
			}
		case "minimum":
			c.minimum, err = number(val, where)
		case "maximum":
			c.maximum, err = number(val, where)
		case "minLength":
			c.minLength, err = nonNegative(val, where)
		case "minItems":
			c.minItems, err = nonNegative(val, where)
		case "maxItems":
			c.maxItems, err = nonNegative(val, where)
		case "pattern":
			src, isString := val.(string)
			if !isString {
				err = fmt.Errorf("%s must be a string", where)
				break
			}
			re, perr := jsRegexp(src)
			if perr != nil {
				err = fmt.Errorf("%s: %w", where, perr)
				break
			}
			c.pattern, c.hasPattern = re.(jsPattern), true
		case "format":
			name, _ := val.(string)
			if c.format = formatChecks[name]; c.format == nil {
				err = fmt.Errorf("%s: unknown format %q", where, name)
			}
			c.formatName = name
			groups["string"] = true
		case "items":
			c.items, err = compileCheck(val, where)
		case "required":
			c.required, err = stringList(val, where)
		case "properties":
			props, isObject := val.(*jsObject)
			if !isObject {
				err = fmt.Errorf("%s must be an object", where)
				break
			}
			for _, name := range props.keys {
				sub, serr := compileCheck(props.values[name], where+"/"+name)
				if serr != nil {
					return nil, serr
				}
				c.props = append(c.props, prop{name, sub})
			}
		default:
			err = fmt.Errorf("%s: keyword not supported by the compiled validator", where)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(c.types) == 1 && groupOf(c.types[0]) != "" && groups[groupOf(c.types[0])] {
		c.typeGroup = groupOf(c.types[0])
	}
	return c, nil
}

// groupOf is ajv's keyword group of a type; integer, boolean and null have
// none, so their type error always comes up front.
func groupOf(t string) string {
	switch t {
	case "number", "string", "array", "object":
		return t
	}
	return ""
}

func stringList(v any, where string) ([]string, error) {
	if s, ok := v.(string); ok {
		return []string{s}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a string or an array of strings", where)
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, fmt.Errorf("%s must hold strings", where)
		}
	}
	return out, nil
}

func number(v any, where string) (*float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("%s must be a number", where)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return &f, err
}

func nonNegative(v any, where string) (*int, error) {
	f, err := number(v, where)
	if err != nil || *f < 0 || *f != math.Trunc(*f) {
		return nil, fmt.Errorf("%s must be a non-negative integer", where)
	}
	n := int(*f)
	return &n, nil
}

// plain turns a schema value into the form decodeJSON gives a body's values.
func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case *jsObject:
		out := make(map[string]any, len(x.keys))
		for _, k := range x.keys {
			out[k] = plain(x.values[k])
		}
		return out
	}
	return v
}
