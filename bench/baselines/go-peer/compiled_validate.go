package main

// Walking a record with the compiled checks (compiled.go), in ajv's order.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

func (cv *CompiledValidator) Validate(record any) []FieldError {
	r := validation{loc: make([]step, 0, 8)}
	cv.root.validate(record, &r)
	return r.out
}

// validation is one record's walk: where it is (no allocation until a
// failure needs the key) and what failed, first message per key.
type validation struct {
	loc []step
	out []FieldError
}

type step struct {
	name  string
	index int // -1: a property
}

func (r *validation) key(extra string) string {
	parts := make([]string, 0, len(r.loc)+1)
	for _, s := range r.loc {
		if s.index >= 0 {
			parts = append(parts, strconv.Itoa(s.index))
		} else {
			parts = append(parts, s.name)
		}
	}
	if extra != "" {
		parts = append(parts, extra)
	}
	return errorKey(parts)
}

func (r *validation) add(key, msg string) {
	for _, e := range r.out {
		if e.Key == key {
			return
		}
	}
	r.out = append(r.out, FieldError{key, msg})
}

// fail records an error of c's own keywords: c's x-error, else msg.
func (r *validation) fail(c *check, msg func() string) {
	key := r.key("")
	if key == "" {
		key = "body"
	}
	if c.xError != "" {
		r.add(key, c.xError)
		return
	}
	r.add(key, msg())
}

func (c *check) typeMessage(r *validation) func() string {
	return func() string {
		if len(r.loc) == 0 {
			return "must be a JSON object"
		}
		return "must be " + strings.Join(c.types, ",")
	}
}

func (c *check) validate(v any, r *validation) {
	typeOK := len(c.types) == 0
	for _, t := range c.types {
		if isType(v, t) {
			typeOK = true
			break
		}
	}
	if !typeOK && c.typeGroup == "" {
		r.fail(c, c.typeMessage(r))
	}
	if c.hasConst && !jsEqual(v, c.constValue) {
		r.fail(c, func() string { return "must be equal to constant" })
	}
	if c.enum != nil && !c.inEnum(v) {
		r.fail(c, func() string {
			parts := make([]string, len(c.enum))
			for i, e := range c.enum {
				parts[i] = jsString(e)
			}
			return "must be one of: " + strings.Join(parts, ", ")
		})
	}
	if !typeOK && c.typeGroup != "" {
		r.fail(c, c.typeMessage(r))
	}
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) {
			break // JSON.parse's Infinity: not a number to ajv (strictNumbers), no number keyword applies
		}
		if c.minimum != nil && x < *c.minimum {
			r.fail(c, func() string { return "must be >= " + jsNumber(*c.minimum) })
		}
		if c.maximum != nil && x > *c.maximum {
			r.fail(c, func() string { return "must be <= " + jsNumber(*c.maximum) })
		}
	case string:
		if c.minLength != nil && utf8.RuneCountInString(x) < *c.minLength {
			r.fail(c, func() string { return fmt.Sprintf("must NOT have fewer than %d characters", *c.minLength) })
		}
		if c.hasPattern && !c.pattern.MatchString(x) {
			r.fail(c, func() string { return fmt.Sprintf("must match pattern %q", c.pattern.source) })
		}
		if c.format != nil && !c.format(x) {
			r.fail(c, func() string { return fmt.Sprintf("must match format %q", c.formatName) })
		}
	case []any:
		if c.minItems != nil && len(x) < *c.minItems {
			r.fail(c, func() string { return fmt.Sprintf("must NOT have fewer than %d items", *c.minItems) })
		}
		if c.maxItems != nil && len(x) > *c.maxItems {
			r.fail(c, func() string { return fmt.Sprintf("must NOT have more than %d items", *c.maxItems) })
		}
		if c.items != nil {
			for i, e := range x {
				r.loc = append(r.loc, step{index: i})
				c.items.validate(e, r)
				r.loc = r.loc[:len(r.loc)-1]
			}
		}
	case map[string]any:
		for _, name := range c.required {
			if _, ok := x[name]; !ok {
				r.add(r.key(name), "is required")
			}
		}
		for _, p := range c.props {
			if val, ok := x[p.name]; ok {
				r.loc = append(r.loc, step{name: p.name, index: -1})
				p.check.validate(val, r)
				r.loc = r.loc[:len(r.loc)-1]
			}
		}
	}
}

func (c *check) inEnum(v any) bool {
	for _, e := range c.enum {
		if jsEqual(v, e) {
			return true
		}
	}
	return false
}

// isType is ajv's type check with strictNumbers: Infinity is no number.
func isType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	case float64:
		if math.IsInf(x, 0) {
			return false
		}
		return t == "number" || (t == "integer" && x == math.Trunc(x))
	}
	return false
}

// jsEqual is fast-deep-equal, which ajv uses for const and enum.
func jsEqual(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !jsEqual(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}
