package redistest

import (
	"slices"
	"testing"
)

func TestServer(t *testing.T) {
	s := Start(t)
	c := Dial(t, s.Addr)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "+PONG\r\n"},
		{[]string{"SET", "b", "x y"}, "+OK\r\n"},
		{[]string{"SET", "a", "1"}, "+OK\r\n"},
		{[]string{"GET", "b"}, "$3\r\nx y\r\n"},
		{[]string{"GET", "none"}, "$-1\r\n"},
	} {
		if got := c.Do(tt.args...); got != tt.want {
			t.Errorf("Do(%q) = %q; want %q", tt.args, got, tt.want)
		}
	}
	if got, want := s.Keys(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Keys() = %q; want %q", got, want)
	}
	c.Send(Request("QUIT"))
	if got := c.Read(); got != "+OK\r\n" || !c.Closed() {
		t.Errorf("QUIT = %q and the connection stays open; want +OK and a close", got)
	}
	s.Restart()
	if got := s.Keys(); len(got) != 0 {
		t.Errorf("Keys() after Restart = %q; want none", got)
	}
}
