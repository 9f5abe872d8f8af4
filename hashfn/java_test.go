package hashfn

import "testing"

// The seed articles print these values for their Java getHash.
func TestJavaFNV1_32Seed(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
	}{
		{"192.168.0.0:111", 575774686},
		{"192.168.0.1:111", 8518713},
		{"192.168.0.2:111", 1361847097},
		{"192.168.0.3:111", 1171828661},
		{"192.168.0.4:111", 1764547046},
		{"127.0.0.1:1111", 380278925},
		{"221.226.0.1:2222", 1493545632},
		{"10.211.0.1:3333", 1393836017},
		{"192.168.0.0:111&&VN0", 1686427075},
		{"192.168.0.0:111&&VN1", 354859081},
		{"192.168.0.3:111&&VN4", 2050578780},
		{"192.168.0.4:111&&VN4", 1232193678},
	}
	for _, tt := range tests {
		if got := JavaFNV1_32([]byte(tt.in)); got != tt.want {
			t.Errorf("JavaFNV1_32(%q) = %d; want %d", tt.in, got, tt.want)
		}
	}
}
