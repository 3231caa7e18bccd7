/// Web origins (`scheme://host[:port]`, RFC 6454) as browsers send them in `Origin`. Pure
/// functions: safe from any thread.
package enum HTTPOrigin {
    /// Whether `text` is an `http` or `https` origin with a host and no path: what
    /// `http_allowed_origins` accepts.
    package static func isWellFormed(_ text: String) -> Bool {
        for scheme in ["http://", "https://"] where text.hasPrefix(scheme) {
            let authority = text.dropFirst(scheme.count)
            return !authority.isEmpty
                && !authority.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0 == " " || $0 == "@" })
        }
        return false
    }

    /// Whether a page of `origin` may use the front door: it is the server's own
    /// (`isSameOrigin`) or one of `allowed` (`http_allowed_origins`).
    package static func isAllowed(_ origin: String, host: String?, allowed: [String]) -> Bool {
        isSameOrigin(origin, host: host) || allowed.contains(origin)
    }

    /// Whether `origin` names the server the request was sent to (`Host`): a page the server
    /// itself served, over `http_listen` or `https_listen`. Either scheme is accepted: a
    /// host and port serve one of the two, so a page at that host and port with the other
    /// scheme cannot exist.
    static func isSameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host = host?.lowercased() else { return false }
        let origin = origin.lowercased()
        return origin == "http://" + host || origin == "https://" + host
    }
}
