package tool

import (
	"context"
	"sync"
)

// Lazy returns a tool that build makes on first use, once: when its
// Definition or Run is first called. New infers schemas by reflection,
// which for a program that builds every tool set's tools to run one call
// (toolgate call) costs more than the call. head is the tool's definition
// without its schemas, known beforehand; a registry keeps it (see
// Headed) and asks for the whole definition only when it needs it. The
// built tool's definition must match head but for the schemas.
func Lazy(head Definition, build func() Tool) Tool {
	return &lazy{head: head, tool: sync.OnceValue(build)}
}

// HeadOf returns the definition New(name, description, fn, opts...) has,
// but for the schemas: the head of a Lazy tool that New builds.
func HeadOf(name, description string, opts ...Option) Definition {
	d := Definition{Name: name, Description: description, Level: LevelWrite}
	for _, o := range opts {
		o(&d)
	}
	return d
}

// Headed is a tool that knows its definition without the schemas (Lazy's).
type Headed interface {
	Tool
	Head() Definition
}

type lazy struct {
	head Definition
	tool func() Tool
}

func (l *lazy) Head() Definition { return l.head }

func (l *lazy) Definition() Definition { return l.tool().Definition() }

func (l *lazy) Run(ctx context.Context, call Call) (Result, error) { return l.tool().Run(ctx, call) }
