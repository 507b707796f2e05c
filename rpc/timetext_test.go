package rpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// stamp is the test's instant: 2026-08-02 01:01:05 on the server's clock
// (a DateTime without a Kind is local time in NewLife).
var stamp = time.Date(2026, 8, 2, 1, 1, 5, 0, time.Local)

type timeArgs struct {
	At    time.Time
	N     int
	Items []struct{ When *time.Time }
}

// timeServer serves actions that take and return times; T/At answers
// its argument as RFC 3339 in UTC, so that a test compares instants.
func timeServer(t *testing.T, cfg rpc.Config) string {
	utc := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	_, addr := startServer(t, cfg, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "T/At", func(_ context.Context, at time.Time) (string, error) { return utc(at), nil }))
		must(t, rpc.Handle(srv, "T/Named", func(_ context.Context, at time.Time) (string, error) { return utc(at), nil }, rpc.WithParams("dt")))
		must(t, rpc.Handle(srv, "T/Struct", func(_ context.Context, a timeArgs) (string, error) {
			s := fmt.Sprintf("%s %d", utc(a.At), a.N)
			for _, it := range a.Items {
				s += " " + utc(*it.When)
			}
			return s, nil
		}))
		must(t, rpc.Handle(srv, "T/Now", func(context.Context, struct{}) (time.Time, error) { return stamp, nil }))
		must(t, rpc.Handle(srv, "T/NowUTC", func(context.Context, struct{}) (time.Time, error) { return stamp.UTC(), nil }))
		must(t, rpc.Handle(srv, "T/Zero", func(context.Context, struct{}) (time.Time, error) { return time.Time{}, nil }))
	})
	return addr
}

// The forms NewLife's ChangeType (Utility.ToDateTime: DateTime.TryParse in
// the invariant culture, yyyy-M-d, yyyy/M/d, yyyyMMddHHmmss, yyyyMMdd, a
// " UTC" or "Z" suffix) and JsonReader (numbers as Unix seconds or
// milliseconds, "/Date(ms)/") read, as NewLife clients send them.
var timeForms = []struct {
	in   string
	want time.Time
}{
	{"08/02/2026 01:01:05", stamp},   // DateTime.ToString(), invariant culture (older JsonEncoder: value + "")
	{"2026-08-02 01:01:05", stamp},   // ToFullString (JsonEncoder)
	{"2026-08-02T01:01:05", stamp},   // FastJson's JsonWriter
	{`"2026-08-02T01:01:05"`, stamp}, // older JsonEncoder: args.ToJson()
	{"2026-08-02 01:01:05.250", stamp.Add(250 * time.Millisecond)},
	{"8/2/2026 1:01:05 AM", stamp}, // en-US
	{"2026/8/2 1:01:05", stamp},    // zh-CN
	{"2026-8-2", time.Date(2026, 8, 2, 0, 0, 0, 0, time.Local)},
	{"20260802010105", stamp},
	{"20260802", time.Date(2026, 8, 2, 0, 0, 0, 0, time.Local)},
	{"2026-08-02T01:01:05.1234567+08:00", time.Date(2026, 8, 1, 17, 1, 5, 123456700, time.UTC)}, // DateTimeOffset "O"
	{"2026-08-02T01:01:05Z", time.Date(2026, 8, 2, 1, 1, 5, 0, time.UTC)},
	{"2026-08-02 01:01:05 UTC", time.Date(2026, 8, 2, 1, 1, 5, 0, time.UTC)},
	{"Sun, 02 Aug 2026 01:01:05 GMT", time.Date(2026, 8, 2, 1, 1, 5, 0, time.UTC)}, // "R"
	{"1785632465", time.Unix(1785632465, 0)},
	{"1785632465000", time.Unix(1785632465, 0)},
	{"/Date(1785632465000)/", time.Unix(1785632465, 0)},
}

func TestTimeFormsBindOverSRMP(t *testing.T) {
	addr := timeServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	seq := byte(0)
	for _, tc := range timeForms {
		want := tc.want.UTC().Format(time.RFC3339Nano)
		seq++
		if b0, got := callSRMP(t, rc, seq, "T/At", tc.in); b0 != b0Reply || got != want {
			t.Errorf("T/At %s: %02x %s, want %s", tc.in, b0, got, want)
		}
		seq++
		arg := `{"Token":"k","dt":` + jsonText(tc.in) + `}`
		if b0, got := callSRMP(t, rc, seq, "T/Named", arg); b0 != b0Reply || got != want {
			t.Errorf("T/Named %s: %02x %s, want %s", arg, b0, got, want)
		}
		seq++
		arg = `{"at":` + jsonText(tc.in) + `,"N":"3","items":[{"when":` + jsonText(tc.in) + `}]}`
		if b0, got := callSRMP(t, rc, seq, "T/Struct", arg); b0 != b0Reply || got != want+" 3 "+want {
			t.Errorf("T/Struct %s: %02x %s, want %s 3 %s", arg, b0, got, want, want)
		}
	}
	// A text that is no time is still a 400, naming it.
	if b0, got := callSRMP(t, rc, 200, "T/At", "soon"); b0 != b0Error || !strings.Contains(got, `"soon" is not a time`) {
		t.Errorf("T/At soon: %02x %s, want a 400", b0, got)
	}
}

// jsonText is s as a JSON value: s itself when it is a JSON string or a
// number, else s quoted.
func jsonText(s string) string {
	if json.Valid([]byte(s)) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func TestTimeFormsBindOverHTTP(t *testing.T) {
	addr := timeServer(t, rpc.Config{})
	hc := dialRaw(t, addr)
	for _, tc := range timeForms {
		want := tc.want.UTC().Format(time.RFC3339Nano)
		_, got := hc.httpDo("GET /T/Named?dt=" + url.QueryEscape(strings.Trim(tc.in, `"`)) + " HTTP/1.1\r\nHost: x\r\n\r\n")
		if w := `{"action":"T/Named","code":0,"data":"` + want + `"}`; got != w {
			t.Errorf("GET T/Named %s: %s, want %s", tc.in, got, w)
		}
		body := `{"At":` + jsonText(tc.in) + `,"items":[{"When":` + jsonText(tc.in) + `}]}`
		_, got = hc.httpDo(fmt.Sprintf("POST /T/Struct HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
		if w := `{"action":"T/Struct","code":0,"data":"` + want + ` 0 ` + want + `"}`; got != w {
			t.Errorf("POST T/Struct %s: %s, want %s", body, got, w)
		}
	}
}

// A time result: in an SRMP data block as NewLife's JsonEncoder writes it
// (ToFullString, "yyyy-MM-dd HH:mm:ss"); in HTTP's JSON as its JsonWriter
// does ("yyyy-MM-ddTHH:mm:ss", "Z" after a UTC time, "" for MinValue).
func TestTimeResults(t *testing.T) {
	addr := timeServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	for i, tc := range []struct{ action, srmp, json string }{
		{"T/Now", "2026-08-02 01:01:05", `"` + stamp.Format("2006-01-02T15:04:05") + `"`},
		{"T/NowUTC", stamp.UTC().Format("2006-01-02 15:04:05"), `"` + stamp.UTC().Format("2006-01-02T15:04:05") + `Z"`},
		{"T/Zero", "0001-01-01 00:00:00", `""`},
	} {
		if b0, got := callSRMP(t, rc, byte(i+1), tc.action, ""); b0 != b0Reply || got != tc.srmp {
			t.Errorf("SRMP %s: %02x %q, want %q", tc.action, b0, got, tc.srmp)
		}
		hc := dialRaw(t, addr)
		_, got := hc.httpDo("GET /" + tc.action + " HTTP/1.1\r\nHost: x\r\n\r\n")
		if w := `{"action":"` + tc.action + `","code":0,"data":` + tc.json + `}`; got != w {
			t.Errorf("HTTP %s: %s, want %s", tc.action, got, w)
		}
	}
	addr = timeServer(t, rpc.Config{UseHTTPStatus: true})
	hc := dialRaw(t, addr)
	if _, got := hc.httpDo("GET /T/NowUTC HTTP/1.1\r\nHost: x\r\n\r\n"); got != `"`+stamp.UTC().Format("2006-01-02T15:04:05")+`Z"` {
		t.Errorf("UseHTTPStatus T/NowUTC: %s", got)
	}
}

// A lifenet client reads a NewLife server's times: a bare DateTime result
// (ToFullString) and DateTime fields of a JSON result (FastJson's form,
// which has no zone and which encoding/json alone refuses).
func TestClientReadsNewLifeTimes(t *testing.T) {
	addr := fakeServer(t, func(f frame) []byte {
		n := int(f.payload[0])
		switch string(f.payload[1 : 1+n]) {
		case "T/Now":
			return srmp(b0Reply, f.seq, okBody("T/Now", "2026-08-02 01:01:05"))
		default:
			return srmp(b0Reply, f.seq, okBody("T/Obj", `{"At":"2026-08-02T01:01:05","N":3,"Items":[{"When":"2026-08-02T01:01:05Z"},{"When":""}]}`))
		}
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	now, err := rpc.Call[time.Time](context.Background(), cl, "T/Now", nil)
	if err != nil || !now.Equal(stamp) {
		t.Fatalf("T/Now = %v, %v; want %v", now, err, stamp)
	}
	obj, err := rpc.Call[timeArgs](context.Background(), cl, "T/Obj", nil)
	switch {
	case err != nil:
		t.Fatalf("T/Obj: %v", err)
	case !obj.At.Equal(stamp) || obj.N != 3 || len(obj.Items) != 2:
		t.Fatalf("T/Obj = %+v", obj)
	case !obj.Items[0].When.Equal(time.Date(2026, 8, 2, 1, 1, 5, 0, time.UTC)) || !obj.Items[1].When.IsZero():
		t.Fatalf("T/Obj items = %v, %v", obj.Items[0].When, obj.Items[1].When)
	}
}
