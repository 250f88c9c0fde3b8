package platform

// Change is one change a plan makes, the same for every resource: the
// attribute path it concerns (a core path, such as capacity.type or
// features) and what changes, or, for a destructive or refused change, what
// would be lost. Each resource's change set groups its changes by what
// applying them does (replace, roll, in place, repair, ...).
type Change struct {
	Path   string
	Reason string
}

// changePathsOf lists the paths of changes.
func changePathsOf(cs ...[]Change) []string {
	var out []string
	for _, c := range cs {
		for _, ch := range c {
			out = append(out, ch.Path)
		}
	}
	return out
}
