package rpc

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Times in the forms NewLife writes and reads (docs/PROTOCOL.md §5.2c).

// timeLayout is how NewLife writes a DateTime value in a data block
// (JsonEncoder: DateTime.ToFullString).
const timeLayout = "2006-01-02 15:04:05"

// unixSecondsMax is NewLife's ToDateTime(Int64) threshold: a Unix time
// beyond 100 years of seconds is in milliseconds.
const unixSecondsMax = 100 * 365 * 24 * 3600

// timeLayouts are the forms of .NET's DateTime.TryParse in the invariant
// culture that NewLife's peers send: ISO 8601 (a 'T' or a space; a
// fraction of any length follows the seconds; an offset or none), the
// invariant ToString() "MM/dd/yyyy HH:mm:ss", en-US's "M/d/yyyy h:mm:ss
// tt", zh-CN's "yyyy/M/d H:mm:ss", each with or without seconds, and
// dates alone. Go reads one- and two-digit fields alike under "1", "2",
// "15", "3", "4" and "5".
var timeLayouts = func() []string {
	var out []string
	times := []string{"15:4:5", "15:4", "3:4:5 PM", "3:4 PM"}
	zones := []string{"", "-07:00", "-0700", "-07"}
	for _, d := range []string{"2006-1-2T", "2006-1-2 ", "2006/1/2 ", "1/2/2006 "} { // the date, then its separator
		for _, t := range times {
			for _, z := range zones {
				out = append(out, d+t+z)
			}
		}
		if d[len(d)-1] == ' ' {
			out = append(out, d[:len(d)-1]) // the date alone
		}
	}
	return append(out, time.RFC1123, time.RFC1123Z, time.RFC850, time.ANSIC)
}()

// parseTime reads a time in the forms NewLife's ChangeType (Utility
// ToDateTime) and JSON reader (JsonReader.CreateDateTime) accept:
//   - empty: the zero time (NewLife's DateTime.MinValue);
//   - "yyyy-MM-dd HH:mm:ss" (NewLife's own), then the timeLayouts;
//   - a trailing " UTC" or "Z": the wall clock in UTC; an offset: that
//     instant; neither: the wall clock in time.Local (a DateTime without
//     a Kind);
//   - 14 digits yyyyMMddHHmmss, 8 digits yyyyMMdd;
//   - other digits (a sign allowed): a Unix time, in seconds, or in
//     milliseconds past 100 years of seconds (NewLife's ToDateTime(Int64));
//   - "/Date(ms)/" (and "/Date(ms+hhmm)/", the offset ignored, as NewLife).
//
// Day-first dates (dd/MM/yyyy, other cultures' ToString) are read as
// month-first, as in the invariant culture.
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.ParseInLocation(timeLayout, s, time.Local); err == nil {
		return t, nil
	}
	if t, ok := digitsTime(s); ok {
		return t, nil
	}
	if strings.HasPrefix(s, "/Date(") && strings.HasSuffix(s, ")/") {
		ms := s[6 : len(s)-2]
		if i := strings.IndexAny(ms[min(1, len(ms)):], "+-"); i >= 0 {
			ms = ms[:i+1]
		}
		if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
			return unixTime(n), nil
		}
	}
	text, loc := s, time.Local
	switch {
	case len(s) > 4 && strings.EqualFold(s[len(s)-4:], " UTC"):
		text, loc = s[:len(s)-4], time.UTC
	case s[len(s)-1] == 'Z' || s[len(s)-1] == 'z':
		text, loc = s[:len(s)-1], time.UTC
	}
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, text, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %q is not a time", ErrArgs, clip(s))
}

// digitsTime reads s when it is all digits (after an optional sign):
// yyyyMMddHHmmss, yyyyMMdd, else a Unix time (unixTime).
func digitsTime(s string) (time.Time, bool) {
	d := s
	if d[0] == '-' || d[0] == '+' {
		d = d[1:]
	}
	if d == "" || strings.TrimLeft(d, "0123456789") != "" {
		return time.Time{}, false
	}
	if len(s) == 14 || len(s) == 8 {
		layout := "20060102150405"[:len(s)]
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, true
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return unixTime(n), true
}

// unixTime is NewLife's ToDateTime of an integer: seconds since 1970, or
// milliseconds when beyond 100 years of seconds, in UTC.
func unixTime(n int64) time.Time {
	if n > unixSecondsMax || n < -unixSecondsMax {
		return time.UnixMilli(n).UTC()
	}
	return time.Unix(n, 0).UTC()
}

// timeOfJSON reads a raw JSON value (a string, a number) or raw text as a
// time (parseTime); null is the zero time.
func timeOfJSON(raw []byte) (time.Time, error) {
	if string(raw) == "null" {
		return time.Time{}, nil
	}
	return parseTime(trimText(raw))
}

// appendTimeJSON renders a time value (its data-block text, timeLayout)
// as NewLife's JSON writer does (JsonWriter.WriteDateTime):
// "yyyy-MM-ddTHH:mm:ss", "Z" after a UTC time, "" for a year up to 1000
// (DateTime.MinValue).
func appendTimeJSON(dst []byte, v []byte, utc bool) []byte {
	if len(v) != len(timeLayout) || string(v[:4]) <= "1000" {
		return append(dst, `""`...)
	}
	dst = append(dst, '"')
	dst = append(dst, v[:10]...)
	dst = append(dst, 'T')
	dst = append(dst, v[11:]...)
	if utc {
		dst = append(dst, 'Z')
	}
	return append(dst, '"')
}
