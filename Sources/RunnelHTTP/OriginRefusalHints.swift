import RunnelServer

/// When the log names an origin `http_allowed_origins` refuses: a page of another site whose
/// request is refused `403 forbidden_origin`, or whose answer its browser keeps from it for want
/// of CORS fields (what a new user sees only as a browser console's CORS error). Each origin is
/// named once, so a page that sends many requests logs one line; and at most one origin a
/// second, so a client that sends a new `Origin` with each request (anything but a browser
/// can) cannot flood the log; an origin passed over then is named at a later request of its.
/// The origins named are remembered up to `capacity`, after which the memory starts over (an
/// origin may then be named again).
///
/// Thread rules: a value, behind the lock the front doors of a process's loops share. Lifetime
/// rule: theirs, for the process's life.
package struct OriginRefusalHints: Sendable {
    static let capacity = 1024
    static let interval: Duration = .seconds(1)
    /// The longest origin named: a host name is at most 253 bytes.
    static let maxOriginBytes = 300

    private var named: Set<String> = []
    private var lastNamed: ContinuousClock.Instant?

    package init() {}

    /// What the log says of a request from a page of `origin`: how to allow it, or, for a page
    /// that has no origin to list (`null`: one opened from a file, or sandboxed), how to serve
    /// it; nil for an `Origin` no browser sends, which is no one's page.
    static func hint(for origin: String) -> String? {
        if origin == "null" {
            return "refused a request from origin null (a page opened from a file, or sandboxed), which "
                + "http_allowed_origins cannot allow: serve the page over HTTP, such as from http_static_dir"
        }
        guard origin.utf8.count <= maxOriginBytes, HTTPOrigin.isWellFormed(origin) else { return nil }
        return "refused a request from origin \(origin): add it to http_allowed_origins to allow it"
    }

    /// Whether the log names `origin`, refused at `now`; if so, it is not named again.
    mutating func shouldName(_ origin: String, at now: ContinuousClock.Instant) -> Bool {
        guard !named.contains(origin) else { return false }
        if let lastNamed, now - lastNamed < Self.interval { return false }
        if named.count >= Self.capacity { named.removeAll() }
        named.insert(origin)
        lastNamed = now
        return true
    }
}
