package rpc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// An HTTP body is read by its Content-Type; one not valid for it is a 400
// (415 for a type the gateway does not read) naming the problem, never a
// call with zero arguments.
func TestHTTPBodyByContentType(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	const form, js = "application/x-www-form-urlencoded", "application/json"
	for _, tc := range []struct {
		name, action, ctype, body string
		code                      int
		data, mention             string
	}{
		{"JSON", "Bench/Add", js, `{"a":1,"b":2}`, 0, "3", ""},
		{"JSON, no Content-Type", "Bench/Add", "", `{"a":1,"b":2}`, 0, "3", ""},
		{"form", "Bench/Add", form, "a=1&b=2", 0, "3", ""},
		{"form, no Content-Type", "Bench/Add", "", "a=1&b=2", 0, "3", ""},
		{"JSON as a form (curl -d)", "Bench/Add", form, `{"a":1,"b":2}`, 400, "", "Content-Type: application/json"},
		{"not JSON as a form", "Bench/Add", form, "not json", 400, "", `field \"not json\" has no '='`},
		{"not JSON as JSON", "Bench/Add", js, "not json", 400, "", "not valid JSON"},
		{"truncated JSON", "Bench/Add", js, `{"a":1`, 400, "", "not valid JSON"},
		{"a JSON string", "Bench/EchoString", js, `"hello"`, 0, `"hello"`, ""},
		{"an escaped JSON string", "Bench/EchoString", js, `"a\"b"`, 0, `"a\"b"`, ""},
		{"a JSON number", "Bench/EchoString", js, `42`, 0, `"42"`, ""},
		{"text", "Bench/EchoString", "text/plain; charset=utf-8", "hello", 0, `"hello"`, ""},
		{"multipart", "Bench/Add", "multipart/form-data; boundary=x", "--x--", 415, "", "Content-Type"},
		{"bad Content-Type", "Bench/Add", "a/b; =", "a=1", 400, "", "Content-Type"},
		// A second header line rides on the type's.
		{"gzip", "Bench/Add", js + "\r\nContent-Encoding: gzip", "\x1f\x8b\x08\x00\x00", 415, "", "Content-Encoding"},
		{"identity", "Bench/Add", js + "\r\nContent-Encoding: identity", `{"a":1,"b":2}`, 0, "3", ""},
	} {
		head := fmt.Sprintf("POST /%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n", tc.action, len(tc.body))
		if tc.ctype != "" {
			head += "Content-Type: " + tc.ctype + "\r\n"
		}
		_, got := rc.httpDo(head + "\r\n" + tc.body)
		prefix := fmt.Sprintf(`{"action":%q,"code":%d,"data":`, tc.action, tc.code)
		switch {
		case !strings.HasPrefix(got, prefix):
			t.Errorf("%s: %s, want code %d", tc.name, got, tc.code)
		case tc.code == 0 && got != prefix+tc.data+"}":
			t.Errorf("%s: %s, want data %s", tc.name, got, tc.data)
		case tc.code != 0 && !strings.Contains(got, tc.mention):
			t.Errorf("%s: %s, want a message naming %q", tc.name, got, tc.mention)
		}
	}
}
