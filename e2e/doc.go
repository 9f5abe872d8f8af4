// Package e2e holds chash's end-to-end tests that drive a real browser:
// headless Chromium through chromedp, against chash proxy's admin listener
// in front of real memcached and Redis servers. It is a module of its own, so
// that chromedp and its Chrome DevTools Protocol bindings stay out of the
// main module's go.mod; the tests reach the proxy's internal packages
// through the replace directive of its go.mod.
package e2e
