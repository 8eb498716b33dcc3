package stateless

import (
	"log/slog"
	"net/http"
)

func slogString(k, v string) slog.Attr  { return slog.String(k, v) }
func slogInt(k string, v int) slog.Attr { return slog.Int(k, v) }

func slogErr(err error) slog.Attr {
	if err == nil {
		return slog.Attr{}
	}
	return slog.String("err", err.Error())
}

// levelFor logs server faults as errors and the peer's mistakes as
// information: a flood of malformed requests must not page anyone.
func levelFor(status int) slog.Level {
	if status >= http.StatusInternalServerError {
		return slog.LevelError
	}
	return slog.LevelInfo
}
