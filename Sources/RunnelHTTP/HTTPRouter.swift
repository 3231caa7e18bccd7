/// The front door's paths: exact ones (`/stats`) and prefixes (`/pub/`, whose rest is a
/// subject). Built once; loop thread only.
final class HTTPRouter {
    private let exact: [String: any HTTPRoute]
    private let prefixes: [(prefix: String, route: any HTTPRoute)]

    init(exact: [String: any HTTPRoute], prefixes: [(prefix: String, route: any HTTPRoute)]) {
        self.exact = exact
        self.prefixes = prefixes
    }

    /// The route of `path` (still percent-encoded), or nil (`404 not_found`).
    func route(for path: Substring) -> (any HTTPRoute)? {
        if let route = exact[String(path)] { return route }
        return prefixes.first { path.hasPrefix($0.prefix) }?.route
    }
}
