package daemon

// recordOf returns the hash of the request record of trail (the audit
// records' ref), which a signed decision must name; "" when the trail does
// not say (a test's), and no signed decision can then be taken.
func recordOf(trail auditTrail) string {
	if r, ok := trail.(interface{ Ref() string }); ok {
		return r.Ref()
	}
	return ""
}
