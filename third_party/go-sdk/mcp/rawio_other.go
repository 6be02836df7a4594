// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

//go:build !linux

package mcp

import "io"

// PATCH(toolgate): raw system calls on pipes are Linux's only (patch 7,
// rawio_linux.go); elsewhere files are read and written as they are.
type rawFile struct{ io.ReadWriter }

func rawIO(any) *rawFile { return nil }
