package otel

// Version is this module's version, the instrumentation scope's.
const Version = "0.1.0"
