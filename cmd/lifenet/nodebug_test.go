//go:build !lifenet_debug

package main

const debugBuild = false
