package main

// What Node does to the bytes on the way to Kafka, reproduced: UTF-8
// decoding as Buffer.toString does it (WHATWG: one U+FFFD per maximal
// invalid subpart), JSON.stringify's string quoting, and, for the rare
// record that already carries client_id / received_at / request_id,
// JSON.stringify({ ...record, ...extra }) with JavaScript's key order.

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// wellFormed returns b, or a copy with invalid sequences replaced as Node's
// UTF-8 decoder replaces them.
func wellFormed(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			out = append(out, c)
			i++
			continue
		}
		need, lower, upper := 0, byte(0x80), byte(0xbf)
		switch {
		case c >= 0xc2 && c <= 0xdf:
			need = 1
		case c == 0xe0:
			need, lower = 2, 0xa0
		case c == 0xed:
			need, upper = 2, 0x9f
		case c >= 0xe1 && c <= 0xef:
			need = 2
		case c == 0xf0:
			need, lower = 3, 0x90
		case c == 0xf4:
			need, upper = 3, 0x8f
		case c >= 0xf1 && c <= 0xf3:
			need = 3
		default:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		}
		j, ok := i+1, true
		for k := 0; k < need; k++ {
			lo, hi := byte(0x80), byte(0xbf)
			if k == 0 {
				lo, hi = lower, upper
			}
			if j >= len(b) || b[j] < lo || b[j] > hi {
				ok = false
				break
			}
			j++
		}
		if ok {
			out = append(out, b[i:j]...)
		} else {
			out = utf8.AppendRune(out, utf8.RuneError)
		}
		i = j
	}
	return out
}

const hexDigits = "0123456789abcdef"

// appendJSString appends s as JSON.stringify quotes it: only `"`, `\` and
// control characters escaped (no HTML escapes, U+2028 as is).
func appendJSString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"':
			out = append(out, '\\', '"')
		case '\\':
			out = append(out, '\\', '\\')
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// jsObject is a parsed JSON object with JavaScript's property order:
// array-index keys ascending first, then the others in insertion order; a
// repeated key keeps its first place and its last value.
type jsObject struct {
	keys   []string
	values map[string]any
}

func (o *jsObject) set(k string, v any) {
	if _, seen := o.values[k]; !seen {
		o.keys = append(o.keys, k)
	}
	o.values[k] = v
}

func (o *jsObject) ordered() []string {
	var index, other []string
	for _, k := range o.keys {
		if isArrayIndex(k) {
			index = append(index, k)
		} else {
			other = append(other, k)
		}
	}
	sort.Slice(index, func(i, j int) bool {
		a, _ := strconv.ParseUint(index[i], 10, 64)
		b, _ := strconv.ParseUint(index[j], 10, 64)
		return a < b
	})
	return append(index, other...)
}

func isArrayIndex(k string) bool {
	if k == "" || (len(k) > 1 && k[0] == '0') || !isIndex(k) {
		return false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return err == nil && n < 1<<32-1
}

// stringifyWith is JSON.stringify({ ...record, ...extra }) for the record in raw.
func stringifyWith(raw []byte, extra []string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readOrdered(dec)
	if err != nil {
		return nil, err
	}
	obj := v.(*jsObject)
	for i := 0; i+1 < len(extra); i += 2 {
		obj.set(extra[i], extra[i+1])
	}
	return appendJS(nil, obj), nil
}

func readOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			var arr []any
			for dec.More() {
				v, err := readOrdered(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		obj := &jsObject{values: map[string]any{}}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := readOrdered(dec)
			if err != nil {
				return nil, err
			}
			obj.set(k.(string), v)
		}
		_, err := dec.Token()
		return obj, err
	}
	if tok == nil {
		return nil, nil
	}
	return tok, nil
}

func appendJS(out []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(out, "null"...)
	case bool:
		return strconv.AppendBool(out, x)
	case string:
		return appendJSString(out, x)
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
			return append(out, "null"...)
		}
		return append(out, jsNumber(f)...)
	case []any:
		out = append(out, '[')
		for i, e := range x {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJS(out, e)
		}
		return append(out, ']')
	case *jsObject:
		out = append(out, '{')
		for i, k := range x.ordered() {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJSString(out, k)
			out = append(out, ':')
			out = appendJS(out, x.values[k])
		}
		return append(out, '}')
	}
	return out
}

// decodeJSON parses a body as JSON.parse does: numbers as doubles, and one
// beyond the double range as an infinity. goccy/go-json decodes (the same
// results as encoding/json, in about two thirds of the time); a body it
// refuses is decoded again by encoding/json, which tells a number past the
// range (decoded once more with exact numbers, then converted) from bad JSON.
func decodeJSON(raw []byte) (any, error) {
	var v any
	if gojson.Unmarshal(raw, &v) == nil {
		return v, nil
	}
	v = nil
	err := json.Unmarshal(raw, &v)
	if _, overflow := err.(*json.UnmarshalTypeError); overflow {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		v = nil
		if err = dec.Decode(&v); err == nil {
			if _, extra := dec.Token(); extra != io.EOF {
				err = io.ErrUnexpectedEOF
			}
		}
		v = toDoubles(v)
	}
	return v, err
}

func toDoubles(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64) // ±Inf past the range, as JSON.parse
		return f
	case []any:
		for i, e := range x {
			x[i] = toDoubles(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = toDoubles(e)
		}
	}
	return v
}
