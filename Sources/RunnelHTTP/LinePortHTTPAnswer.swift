/// What the line port answers a client that speaks HTTP to it (a browser, curl, a WebSocket
/// client given the wrong port): a connection whose first line is an HTTP request line gets one
/// plain `HTTP/1.1 400 Bad Request` saying what the port speaks and where HTTP is served, and
/// is closed (by `HTTPFrontDoor`, which the line port asks), rather than a `bad_json` line for
/// each line of its head. Only the first line is looked at: a request line further on is a bad
/// line like any other.
///
/// Thread rules: pure functions, from any thread. Lifetime rule: holds nothing.
enum LinePortHTTPAnswer {
    /// Whether `line` (without its line end) is an HTTP/1 request line: a method in capital
    /// letters, a space, a target, and ` HTTP/1.` and a digit at its end. No JSON text starts
    /// with a capital letter.
    static func isRequestLine(_ line: UnsafeRawBufferPointer) -> Bool {
        let version = " HTTP/1.".utf8
        guard let space = line.firstIndex(of: 0x20), space > 0, space + 1 < line.count - version.count - 1,
            line[..<space].allSatisfy({ $0 >= 0x41 && $0 <= 0x5A })
        else { return false }
        let end = line.suffix(version.count + 1)
        return end.dropLast().elementsEqual(version) && (0x30...0x39).contains(end.last!)
    }

    /// The answer, naming `httpListeners` (`http_listen port 7456`; none when the server
    /// serves no HTTP).
    static func response(httpListeners: [String]) -> HTTPResponse {
        let whereHTTPIs =
            httpListeners.isEmpty
            ? "This server serves no HTTP (http_listen is off)."
            : "HTTP, WebSocket (/ws) and Server-Sent Events (/events) are served on "
                + httpListeners.joined(separator: " and ") + "."
        return .text(
            "This port speaks runnel's line protocol, not HTTP: one JSON request per line, such as "
                + "{\"op\":\"ping\"}.\n\(whereHTTPIs)\n",
            status: .badRequest)
    }
}
