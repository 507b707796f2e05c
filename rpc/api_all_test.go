package rpc_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// NewLife's XUnitTest ApiHttpClientTests asserts "String[] Api/All()" and
// "Object Api/Info(String state)": Api/All lists "{ReturnType}
// {action}({ParamType} {name}, …)" with .NET type names.
func TestApiAllNewLifeForm(t *testing.T) {
	addr := nameServer(t)
	rc := dialRaw(t, addr)
	b0, data := callSRMP(t, rc, 1, "Api/All", "")
	var all []string
	if err := json.Unmarshal([]byte(data), &all); b0 != b0Reply || err != nil {
		t.Fatalf("Api/All: %02x %s %v", b0, data, err)
	}
	for _, want := range []string{
		"String[] Api/All()",
		"Object Api/Info(String state)",
		"String Test/GetToken(String Token)",
		"String Name/Echo(String input)",
		"Int32 Name/Twice(Int32 n)",
		"String Test/Unnamed(String value)",
	} {
		if !contains(all, want) {
			t.Errorf("Api/All lacks %q: %q", want, all)
		}
	}
	hc := dialRaw(t, addr)
	_, got := hc.httpDo("GET /Api/All HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.Contains(got, `"String[] Api/All()"`) || !strings.Contains(got, `"Object Api/Info(String state)"`) {
		t.Errorf("HTTP Api/All: %s", got)
	}
}
