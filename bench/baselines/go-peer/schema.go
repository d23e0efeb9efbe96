package main

// The record rules: the gateway's AssetTrackingData schema (exported from its
// build by export-schema.mjs) compiled by santhosh-tekuri/jsonschema, set up
// to behave as the gateway's ajv does (src/validation/schema.ts): all errors
// at once, ajv-formats' `date-time`, the gateway's `iso-date-time`, the
// `x-error` keyword, JavaScript's reading of `\s`, `\S` and `.` in patterns,
// and failures turned into the same `key → message` map (ajv's wording).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Rules is what export-schema.mjs writes.
type Rules struct {
	Schema           json.RawMessage `json:"schema"`
	RequestIDPattern string          `json:"requestIdPattern"`
}

// Validator holds the compiled schema and what the error messages need from
// its source: each subschema's `x-error` and the order of its properties.
type Validator struct {
	schema *jsonschema.Schema
	raw    any            // the schema as parsed, to read x-error by pointer
	order  map[string]int // "pointer/prop" → declaration index, for ajv's error order
	base   string
}

const xErrorVocab = "urn:evidence-gateway:x-error"

func loadRules(file string) (*Rules, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r Rules
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(r.Schema) == 0 || r.RequestIDPattern == "" {
		return nil, fmt.Errorf("%s: needs schema and requestIdPattern", file)
	}
	return &r, nil
}

func newValidator(source json.RawMessage) (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(source))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	// ajv's default draft, and format assertion as ajv-formats does.
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: stringFormat(isAjvDateTime)})
	c.RegisterFormat(&jsonschema.Format{Name: "iso-date-time", Validate: stringFormat(isIsoDateTimeWithZone)})
	c.UseRegexpEngine(jsRegexp)
	vocab, err := xErrorVocabulary()
	if err != nil {
		return nil, err
	}
	c.RegisterVocabulary(vocab)
	c.AssertVocabs()
	const base = "file:///asset-tracking-data.json"
	if err := c.AddResource(base, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(base)
	if err != nil {
		return nil, err
	}
	order := map[string]int{}
	if err := propertyOrder(source, order); err != nil {
		return nil, err
	}
	return &Validator{schema: sch, raw: doc, order: order, base: base}, nil
}

// xErrorVocabulary is ajv's `addKeyword({ keyword: 'x-error', schemaType: 'string' })`:
// the keyword is known, must be a string, and asserts nothing.
func xErrorVocabulary() (*jsonschema.Vocabulary, error) {
	meta, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"properties":{"x-error":{"type":"string"}}}`))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(xErrorVocab, meta); err != nil {
		return nil, err
	}
	sch, err := c.Compile(xErrorVocab)
	if err != nil {
		return nil, err
	}
	return &jsonschema.Vocabulary{URL: xErrorVocab, Schema: sch, Compile: func(*jsonschema.CompilerContext, map[string]any) (jsonschema.SchemaExt, error) { return nil, nil }}, nil
}

func stringFormat(ok func(string) bool) func(any) error {
	return func(v any) error {
		s, isString := v.(string)
		if !isString || ok(s) {
			return nil
		}
		return fmt.Errorf("invalid")
	}
}

// FieldError is one entry of the answer's `errors` map.
type FieldError struct{ Key, Message string }

// RecordValidator is either validator: the library (VALIDATOR=jsonschema)
// or the compiled tree (VALIDATOR=compiled, compiled.go).
type RecordValidator interface {
	Validate(record any) []FieldError
}

// Validate returns the record's problems in the gateway's key form, in the
// order ajv reports them, first message per key.
func (v *Validator) Validate(record any) []FieldError {
	err := v.schema.Validate(record)
	if err == nil {
		return nil
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []FieldError{{"body", "is invalid"}}
	}
	type leaf struct {
		rank    []int
		key     string
		message string
	}
	var leaves []leaf
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		ptr := v.pointer(e.SchemaURL)
		rank := v.rank(e.InstanceLocation)
		if req, isRequired := e.ErrorKind.(*kind.Required); isRequired {
			for i, m := range req.Missing {
				leaves = append(leaves, leaf{append(append(rank[:len(rank):len(rank)], -1000), i), errorKey(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], m)), "is required"})
			}
			return
		}
		key := errorKey(e.InstanceLocation)
		if key == "" {
			key = "body"
		}
		leaves = append(leaves, leaf{rank, key, v.message(e, ptr)})
	}
	walk(verr)
	sort.SliceStable(leaves, func(i, j int) bool { return lessRank(leaves[i].rank, leaves[j].rank) })
	out := make([]FieldError, 0, len(leaves))
	seen := map[string]bool{}
	for _, l := range leaves {
		if !seen[l.key] {
			seen[l.key] = true
			out = append(out, FieldError{l.key, l.message})
		}
	}
	return out
}

func (v *Validator) pointer(schemaURL string) string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	return frag
}

// rank orders errors as ajv's generated code meets them: a subschema's own
// keywords, then its properties in declaration order, array items by index.
func (v *Validator) rank(loc []string) []int {
	r := make([]int, 0, len(loc))
	ptr := ""
	for _, tok := range loc {
		node := v.at(ptr)
		if _, isArray := node["items"]; isArray && isIndex(tok) {
			n, _ := strconv.Atoi(tok)
			r = append(r, n)
			ptr += "/items"
			continue
		}
		r = append(r, v.order[ptr+"/"+tok])
		ptr += "/properties/" + escapePointer(tok)
	}
	return r
}

func lessRank(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

func (v *Validator) at(ptr string) map[string]any {
	node := v.raw
	for _, tok := range strings.Split(ptr, "/")[1:] {
		m, _ := node.(map[string]any)
		node = m[unescapePointer(tok)]
	}
	m, _ := node.(map[string]any)
	return m
}

// message is src/validation/schema.ts's message(): the schema's x-error, the
// enum's values, "must be a JSON object" for a body that is not one, else ajv's text.
func (v *Validator) message(e *jsonschema.ValidationError, ptr string) string {
	if custom, ok := v.at(ptr)["x-error"].(string); ok {
		return custom
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Enum:
		parts := make([]string, len(k.Want))
		for i, w := range k.Want {
			parts[i] = jsString(w)
		}
		return "must be one of: " + strings.Join(parts, ", ")
	case *kind.Type:
		if len(e.InstanceLocation) == 0 {
			return "must be a JSON object"
		}
		return "must be " + strings.Join(k.Want, ",")
	case *kind.InvalidJsonValue:
		// JSON.parse's Infinity, which the library calls no JSON value and ajv no number: its type error.
		switch t := v.at(ptr)["type"].(type) {
		case string:
			return "must be " + t
		case []any:
			return "must be " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(t...)), ","), "[]")
		}
	case *kind.Minimum:
		return "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratString(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must NOT have fewer than %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must NOT have more than %d characters", k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must NOT have fewer than %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must NOT have more than %d items", k.Want)
	case *kind.Pattern:
		return fmt.Sprintf("must match pattern %q", k.Want)
	case *kind.Format:
		return fmt.Sprintf("must match format %q", k.Want)
	case *kind.Const:
		return "must be equal to constant"
	}
	return "is invalid"
}

// errorKey is src/validation/schema.ts's errorKey: `metrics.items[3].k`.
func errorKey(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		if isIndex(p) {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(snakeToCamel(p))
	}
	return b.String()
}

var snake = regexp.MustCompile(`_([a-z0-9])`)

func snakeToCamel(s string) string {
	return snake.ReplaceAllStringFunc(s, func(m string) string { return strings.ToUpper(m[1:]) })
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// propertyOrder records, for each `properties` object of the schema, the
// index of each property in the source text (Go maps forget it).
func propertyOrder(source []byte, out map[string]int) error {
	dec := json.NewDecoder(bytes.NewReader(source))
	var value func(ptr string) error
	value = func(ptr string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			i := 0
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if strings.HasSuffix(ptr, "/properties") {
					out[strings.TrimSuffix(ptr, "/properties")+"/"+key] = i
				}
				i++
				if err := value(ptr + "/" + escapePointer(key)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := value(ptr + "/" + strconv.Itoa(i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return value("")
}
