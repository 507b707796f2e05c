//go:build !unix

package transport

// msgTrunc is the receive flag of a datagram cut short to fit the buffer;
// none here (Windows fails such a read instead, which the loop reports
// through OnError).
const msgTrunc = 0
