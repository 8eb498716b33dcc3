package stateless

import (
	"fmt"
	"log/slog"
)

func slogString(k, v string) slog.Attr  { return slog.String(k, v) }
func slogInt(k string, v int) slog.Attr { return slog.Int(k, v) }

// slogErr records the outcome's cause: its text, or only its type when it
// came from tool code and may quote the call's arguments.
func slogErr(o *Outcome) slog.Attr {
	switch {
	case o.Err == nil:
		return slog.Attr{}
	case o.ErrFromTool:
		return slog.String("err_type", fmt.Sprintf("%T", o.Err))
	}
	return slog.String("err", o.Err.Error())
}
