package middleware

// UnroutedResource is the resource a guard counts a request under when it
// cannot tell the request's route: a net/http guard that runs before the
// router, such as chi's top-level r.Use. Passing such requests unguarded
// would fail open without a word; under this one name they stay inbound
// (system rules see them), show up in the console, and a rule can limit
// them, while the guard logs once that it is blind.
const UnroutedResource = "(unrouted)"
