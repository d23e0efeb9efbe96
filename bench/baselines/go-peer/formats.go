package main

// The gateway's string formats and JavaScript's regular-expression classes,
// ported so that a value passes here exactly when it passes there.

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsSpace is JavaScript's \s: WhiteSpace and LineTerminator (ECMA-262), not
// only the ASCII set Go's \s means.
const jsSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// jsRegexp compiles a schema `pattern` as ajv does (`new RegExp(p, 'u')`,
// unanchored test): `\s`, `\S` and `.` get their JavaScript meaning and
// `\uXXXX` / `\u{X}` Go's spelling. Other syntax is shared by both engines
// for the gateway's patterns.
func jsRegexp(pattern string) (jsonschema.Regexp, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			n := pattern[i+1]
			i++
			switch {
			case n == 's' && inClass:
				b.WriteString(jsSpace)
			case n == 's':
				b.WriteString("[" + jsSpace + "]")
			case n == 'S' && !inClass:
				b.WriteString("[^" + jsSpace + "]")
			case n == 'u' && i+1 < len(pattern) && pattern[i+1] == '{':
				end := strings.IndexByte(pattern[i:], '}')
				if end < 0 {
					b.WriteString(`\u`)
					continue
				}
				b.WriteString(`\x` + pattern[i+1:i+end+1])
				i += end
			case n == 'u' && i+4 < len(pattern):
				b.WriteString(`\x{` + pattern[i+1:i+5] + `}`)
				i += 4
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			if i+1 < len(pattern) && pattern[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				// JavaScript's `[]` matches nothing and `[^]` anything; Go reads `]` there as a literal.
				return nil, fmt.Errorf("pattern %q: JavaScript's empty class has no Go equivalent", pattern)
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		default:
			b.WriteByte(c)
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, err
	}
	return jsPattern{re, pattern}, nil
}

type jsPattern struct {
	*regexp.Regexp
	source string
}

func (p jsPattern) String() string { return p.source }

var isoDateTime = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?(?:Z|z|[+-](\d{2})(?::?(\d{2}))?)$`)

// isIsoDateTimeWithZone is src/validation/formats.ts's: an ISO 8601 date-time
// naming its zone, fields range-checked. Its day check goes through
// `Date.UTC(year, month, 0)`, which reads years 0-99 as 1900-1999: so here too.
func isIsoDateTimeWithZone(s string) bool {
	m := isoDateTime.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	n := func(i int) int {
		if m[i] == "" {
			return 0
		}
		v, _ := strconv.Atoi(m[i])
		return v
	}
	year, month, day, hour, minute, second := n(1), n(2), n(3), n(4), n(5), n(6)
	if month < 1 || month > 12 || hour > 23 || minute > 59 || second > 60 || n(7) > 23 || n(8) > 59 {
		return false
	}
	if year <= 99 {
		year += 1900
	}
	return day >= 1 && day <= daysIn(year, month)
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

var ajvDate = regexp.MustCompile(`^(\d\d\d\d)-(\d\d)-(\d\d)$`)
var ajvTime = regexp.MustCompile(`(?i)^(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)?$`)

// isAjvDateTime is ajv-formats 3's full `date-time`: the string split at
// every `t`, `T` or JavaScript whitespace into exactly a date and a time with
// a zone; a leap second only at 23:59:60 UTC.
func isAjvDateTime(s string) bool {
	at, size, seps := 0, 0, 0
	for i, r := range s {
		if r == 't' || r == 'T' || isJSSpace(r) {
			at, size = i, len(string(r))
			seps++
		}
	}
	return seps == 1 && ajvDateOK(s[:at]) && ajvTimeOK(s[at+size:])
}

func ajvDateOK(s string) bool {
	m := ajvDate.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	year, _ := strconv.Atoi(m[1])
	month, _ := strconv.Atoi(m[2])
	day, _ := strconv.Atoi(m[3])
	days := []int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		return day <= 29
	}
	return day <= days[month]
}

func ajvTimeOK(s string) bool {
	m := ajvTime.FindStringSubmatch(s)
	if m == nil || m[4] == "" {
		return false
	}
	hr, _ := strconv.Atoi(m[1])
	mins, _ := strconv.Atoi(m[2])
	sec, _ := strconv.ParseFloat(m[3], 64)
	sign := 1
	if m[5] == "-" {
		sign = -1
	}
	tzH, _ := strconv.Atoi(m[6])
	tzM, _ := strconv.Atoi(m[7])
	if tzH > 23 || tzM > 59 {
		return false
	}
	if hr <= 23 && mins <= 59 && sec < 60 {
		return true
	}
	utcMin := mins - tzM*sign
	utcHr := hr - tzH*sign
	if utcMin < 0 {
		utcHr--
	}
	return (utcHr == 23 || utcHr == -1) && (utcMin == 59 || utcMin == -1) && sec < 61
}

// jsString is JavaScript's String(value) for the primitives an enum holds.
func jsString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return jsNumber(x)
	}
	text := fmt.Sprint(v)
	if r, ok := new(big.Rat).SetString(text); ok {
		f, _ := r.Float64()
		return jsNumber(f)
	}
	return text
}

func ratString(r *big.Rat) string {
	f, _ := r.Float64()
	return jsNumber(f)
}

// jsNumber is ECMAScript's Number::toString(10).
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest digits and exponent: f = 0.d1d2...dk × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	ev := strconv.Itoa(int(math.Abs(float64(n - 1))))
	if k == 1 {
		return sign + digits + "e" + es + ev
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + es + ev
}
