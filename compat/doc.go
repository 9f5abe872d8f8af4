// Package compat holds point schemes that place nodes on the ring exactly as
// deployed systems do, so that chash can join or replace them without moving a key.
//
// Each scheme is a chash.Scheme. Quirks of the original programs are kept on purpose
// and documented next to the code that keeps them.
package compat
