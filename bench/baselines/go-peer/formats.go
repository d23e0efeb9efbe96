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
	"unicode/utf8"

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

// isIsoDateTimeWithZone is src/validation/formats.ts's: an ISO 8601 date-time
// naming its zone, fields range-checked. Its grammar,
// /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?(?:Z|z|[+-](\d{2})(?::?(\d{2}))?)$/,
// is read here by hand (a regexp match allocates). Its day check goes through
// `Date.UTC(year, month, 0)`, which reads years 0-99 as 1900-1999: so here too.
func isIsoDateTimeWithZone(s string) bool {
	p := scanner{s: s}
	year := p.digits(4)
	month := p.after('-', 2)
	day := p.after('-', 2)
	hour := p.after('T', 2)
	minute := p.after(':', 2)
	second := 0
	if p.peek(':') {
		second = p.after(':', 2)
		if p.peek('.') || p.peek(',') {
			p.i++
			p.fraction()
		}
	}
	tzH, tzM := 0, 0
	switch {
	case p.peek('Z') || p.peek('z'):
		p.i++
	case p.peek('+') || p.peek('-'):
		p.i++
		tzH = p.digits(2)
		if p.peek(':') {
			tzM = p.after(':', 2)
		} else if p.i < len(s) {
			tzM = p.digits(2)
		}
	default:
		return false
	}
	if !p.done() {
		return false
	}
	if month < 1 || month > 12 || hour > 23 || minute > 59 || second > 60 || tzH > 23 || tzM > 59 {
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

// scanner reads fixed-width digit fields; any mismatch makes it fail for good.
type scanner struct {
	s   string
	i   int
	bad bool
}

func (p *scanner) peek(c byte) bool { return !p.bad && p.i < len(p.s) && p.s[p.i] == c }

func (p *scanner) done() bool { return !p.bad && p.i == len(p.s) }

// digits reads exactly n ASCII digits.
func (p *scanner) digits(n int) int {
	if p.bad || p.i+n > len(p.s) {
		p.bad = true
		return -1
	}
	v := 0
	for _, c := range []byte(p.s[p.i : p.i+n]) {
		if c < '0' || c > '9' {
			p.bad = true
			return -1
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v
}

// after reads the byte c, then n digits.
func (p *scanner) after(c byte, n int) int {
	if !p.peek(c) {
		p.bad = true
		return -1
	}
	p.i++
	return p.digits(n)
}

// fraction reads one or more digits.
func (p *scanner) fraction() {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == start {
		p.bad = true
	}
}

// isAjvDateTime is ajv-formats 3's full `date-time`: the string split at
// every `t`, `T` or JavaScript whitespace into exactly a date,
// /^(\d\d\d\d)-(\d\d)-(\d\d)$/, and a time with a zone,
// /^(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)?$/i;
// a leap second only at 23:59:60 UTC.
func isAjvDateTime(s string) bool {
	at, size, seps := 0, 0, 0
	for i, r := range s {
		if r == 't' || r == 'T' || isJSSpace(r) {
			at, size = i, utf8.RuneLen(r)
			seps++
		}
	}
	return seps == 1 && ajvDateOK(s[:at]) && ajvTimeOK(s[at+size:])
}

var monthDays = [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func ajvDateOK(s string) bool {
	p := scanner{s: s}
	year := p.digits(4)
	month := p.after('-', 2)
	day := p.after('-', 2)
	if !p.done() || month < 1 || month > 12 || day < 1 {
		return false
	}
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		return day <= 29
	}
	return day <= monthDays[month]
}

func ajvTimeOK(s string) bool {
	p := scanner{s: s}
	hr := p.digits(2)
	mins := p.after(':', 2)
	secStart := p.i + 1
	p.after(':', 2)
	if p.peek('.') {
		p.i++
		p.fraction()
	}
	if p.bad {
		return false
	}
	sec, _ := strconv.ParseFloat(s[secStart:p.i], 64) // +"59.99…" in JavaScript: the same double
	sign, tzH, tzM := 1, 0, 0
	switch {
	case p.peek('z') || p.peek('Z'):
		p.i++
	case p.peek('+') || p.peek('-'):
		if p.s[p.i] == '-' {
			sign = -1
		}
		p.i++
		tzH = p.digits(2)
		if p.peek(':') {
			tzM = p.after(':', 2)
		} else if p.i < len(s) {
			tzM = p.digits(2)
		}
	default:
		return false // no zone: ajv-formats' strict date-time refuses it
	}
	if !p.done() || tzH > 23 || tzM > 59 {
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

// jsString is how Array.prototype.join shows an enum's primitive values.
func jsString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
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
