package resp

// Replies of redis-server 7.0 to the connection commands a proxy answers
// itself (RouteLocal) and to a client yet to authenticate, without the "-" and
// the line end, for a proxy to answer alike. TestLocalRepliesMatchRedis checks
// each against redis-server.
const (
	// ReplyNoAuth answers a command other than AUTH, HELLO and QUIT from a
	// client yet to authenticate, once Check has passed it.
	ReplyNoAuth = "NOAUTH Authentication required."
	// ReplyHelloNoAuth answers HELLO without AUTH from a client yet to
	// authenticate.
	ReplyHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	// ReplyWrongPass answers AUTH with a wrong password or user.
	ReplyWrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	// ReplyNoPassword answers AUTH with a password where none is needed.
	ReplyNoPassword = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	// ReplyNoProto answers HELLO with a protocol version Redis does not speak;
	// a proxy that speaks RESP2 only answers HELLO 3 with it, which clients
	// such as go-redis take as the signal to speak RESP2.
	ReplyNoProto = "NOPROTO unsupported protocol version"
	// ReplyBadProto answers HELLO with a version that is not a number.
	ReplyBadProto = "ERR Protocol version is not an integer or out of range"
	// ReplyDBRange answers SELECT of a database that does not exist.
	ReplyDBRange = "ERR DB index is out of range"
	// ReplyNotInteger answers SELECT of something other than an integer, and
	// many commands' bad numbers.
	ReplyNotInteger = "ERR value is not an integer or out of range"
)
