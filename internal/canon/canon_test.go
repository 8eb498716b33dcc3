package canon

import "testing"

func TestAppend(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, `{}`},
		{`null`, `{}`},
		{` { "b" : 1 , "a" : [ true , null , "x" ] } `, `{"a":[true,null,"x"],"b":1}`},
		{`{"n":1.0,"m":1e2,"k":-0,"f":0.5,"e":1E-7}`, `{"e":1e-7,"f":0.5,"k":0,"m":100,"n":1}`},
		{`{"big":12345678901234567890123}`, `{"big":1.2345678901234568e22}`},
		{`{"big":12345678901234567890}`, `{"big":12345678901234567000}`},
		{`{"big":1E+400}`, `{"big":1e400}`},
		{`{"s":"\u0041\u00e9<>&\/"}`, `{"s":"Aé<>&/"}`},
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
