package canon

import "testing"

func TestAppend(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, `{}`},
		{`null`, `{}`},
		{` { "b" : 1 , "a" : [ true , null , "x" ] } `, `{"a":[true,null,"x"],"b":1}`},
		{`{"n":1.0,"m":1e2,"k":-0,"f":0.5,"e":1E-7}`, `{"e":1e-7,"f":0.5,"k":0,"m":100,"n":1}`},
		{`{"big":12345678901234567890123}`, `{"big":1.2345678901234568e+22}`},
		{`{"big":12345678901234567890}`, `{"big":12345678901234567000}`},
		{`{"big":1E+400}`, `{"big":1e400}`},
		{`{"s":"\u0041\u00e9<>&\/"}`, `{"s":"Aé<>&/"}`},
		// RFC 8785 §3.2.2.2: U+2028 and U+2029 as they are; \b and \f short.
		{`{"s":"\u2028\u2029\b\f\u001f\u007f"}`, "{\"s\":\"\u2028\u2029\\b\\f\\u001f\u007f\"}"},
		{`{"\u00e9":1,"z":2,"é":3}`, `{"z":2,"é":3}`},
		{`{"\uffff":2,"😀":1}`, "{\"😀\":1,\"\uffff\":2}"}, // UTF-16 order: surrogates sort before U+FFFF
	}
	for _, tt := range tests {
		got, err := Append(nil, []byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s\n got  %s\n want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{`{`, `{"a":1} x`, `nope`} {
		if _, err := Append(nil, []byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestRFC8785 checks the examples of RFC 8785: its sample object
// (§3.2.2) and the number serialisations of its Appendix B.
func TestRFC8785(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	if got, err := Append(nil, []byte(in)); err != nil || string(got) != want {
		t.Errorf("sample\n got  %s\n want %s (%v)", got, want, err)
	}
	for lit, want := range map[string]string{
		"0": "0", "-0": "0", "1": "1", "-1": "-1", "5e-324": "5e-324",
		"1.7976931348623157e308": "1.7976931348623157e+308", "-1.7976931348623157e308": "-1.7976931348623157e+308",
		"9007199254740992": "9007199254740992", "9007199254740993": "9007199254740992",
		"295147905179352830000": "295147905179352830000", "1e21": "1e+21", "1e20": "100000000000000000000",
		"0.000001": "0.000001", "0.0000001": "1e-7", "123e-9": "1.23e-7", "1.5e-7": "1.5e-7",
		"4.35": "4.35", "0.1": "0.1", "1e23": "1e+23", "-5.4e-10": "-5.4e-10", "999999999999999999999": "1e+21",
	} {
		if got, err := Append(nil, []byte(lit)); err != nil || string(got) != want {
			t.Errorf("%s: got %s, want %s (%v)", lit, got, want, err)
		}
	}
}

func TestDigestIgnoresEncoding(t *testing.T) {
	a := Digest([]byte(`{"to":"bob","amount":10}`))
	b := Digest([]byte("{\n  \"amount\": 10.0,\n  \"to\": \"\\u0062ob\"\n}"))
	if a != b {
		t.Error("re-encoded arguments digest differently")
	}
	if a == Digest([]byte(`{"to":"bob","amount":11}`)) {
		t.Error("different arguments digest the same")
	}
	if Digest([]byte(`{"n":12345678901234567890}`)) != Digest([]byte(`{"n":1.2345678901234567e19}`)) {
		t.Error("a big integer re-serialised as a double digests differently")
	}
	if Digest(nil) != Digest([]byte(`{}`)) {
		t.Error("absent arguments differ from {}")
	}
	if Digest([]byte(`{`)) == Digest([]byte(`{}`)) {
		t.Error("malformed input collides with a canonical form")
	}
}
