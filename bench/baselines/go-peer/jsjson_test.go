package main

// The JavaScript behaviours the peer reproduces by hand, against what Node 20
// answers (the expected values were printed by node: String(n),
// Buffer.from(bytes).toString('utf8'), JSON.stringify(s), the gateway's
// bearerToken). try.mjs holds the whole peer against the gateway itself.

import (
	"encoding/hex"
	"testing"
)

func TestJSNumber(t *testing.T) {
	for in, want := range map[float64]string{
		0: "0", 1: "1", -1.5: "-1.5", 1e21: "1e+21", 1e-7: "1e-7", 123456789012345680000: "123456789012345680000",
		1.2345678901234569e+23: "1.2345678901234569e+23", 0.000001: "0.000001", 1.5e-10: "1.5e-10", 5e-324: "5e-324",
		1.7976931348623157e308: "1.7976931348623157e+308", 100: "100", 0.1: "0.1", -90: "-90", 360.0001: "360.0001",
		1e20: "100000000000000000000", 123e-20: "1.23e-18",
	} {
		if got := jsNumber(in); got != want {
			t.Errorf("jsNumber(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestWellFormedIsNodesDecoder(t *testing.T) {
	for in, want := range map[string]string{
		"ff": "efbfbd", "e28241": "efbfbd41", "f09f": "efbfbd", "f09f98": "efbfbd", "eda080": "efbfbdefbfbdefbfbd",
		"c0af": "efbfbdefbfbd", "e08080": "efbfbdefbfbdefbfbd", "f4908080": "efbfbdefbfbdefbfbdefbfbd",
		"61f09f988062": "61f09f988062", "f888808080": "efbfbdefbfbdefbfbdefbfbdefbfbd",
	} {
		b, _ := hex.DecodeString(in)
		if got := hex.EncodeToString(wellFormed(b)); got != want {
			t.Errorf("wellFormed(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestAppendJSString(t *testing.T) {
	for in, want := range map[string]string{
		"a\"b\\c": `"a\"b\\c"`, "\u0001\b\f\n\r\t\u001f": `"\u0001\b\f\n\r\t\u001f"`,
		"\u2028</script>&": "\"\u2028</script>&\"", "é🚚": `"é🚚"`,
	} {
		if got := string(appendJSString(nil, in)); got != want {
			t.Errorf("appendJSString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestStringifyWithKeepsJavaScriptsKeyOrder(t *testing.T) {
	got, err := stringifyWith([]byte(`{"b":1.0,"10":1e2,"2":"x","a":{"z":1,"1":-0},"b":2,"h":1e400}`), []string{"client_id", "c", "b", "last"})
	want := `{"2":"x","10":100,"b":"last","a":{"1":0,"z":1},"h":null,"client_id":"c"}`
	if err != nil || string(got) != want {
		t.Errorf("stringifyWith = %s, %v; want %s", got, err, want)
	}
}

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		header  string
		present bool
		token   string
		detail  string
	}{
		{"", false, "", "missing Bearer token"},
		{"", true, "", "empty Bearer token"},
		{"Bearer", true, "", "empty Bearer token"},
		{"bearer   ", true, "", "empty Bearer token"},
		{"Bearer abc.def-_~+/==", true, "abc.def-_~+/==", ""},
		{"BEARER  t  ", true, "t", ""},
		{"Bearer a b", true, "", "auth_failed:malformed"},
		{"Bearer\ta", true, "", "auth_failed:malformed"},
		{"Bearer a=b", true, "", "auth_failed:malformed"},
		{"Basic a", true, "", "missing Bearer token"},
		{"Bearerx", true, "", "missing Bearer token"},
	} {
		token, err := bearerToken(c.header, c.present)
		detail := ""
		if err != nil {
			detail = err.message
		}
		if token != c.token || detail != c.detail {
			t.Errorf("bearerToken(%q) = %q, %q; want %q, %q", c.header, token, detail, c.token, c.detail)
		}
	}
}

func TestJSRegexpReadsWhitespaceAsJavaScript(t *testing.T) {
	re, err := jsRegexp(`\S`)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]bool{" ": false, "\u00a0\u2003\ufeff": false, "a": true, " x ": true} {
		if got := re.MatchString(in); got != want {
			t.Errorf(`\S on %q = %v, want %v`, in, got, want)
		}
	}
}
