import Testing

@testable import RunnelHTTP
@testable import RunnelServer

/// What the line port answers a client whose first line is an HTTP request: which lines are
/// HTTP request lines (none that is JSON), and the answer's words. `FramingTests` sends them
/// to a real runneld.
///
/// Thread rules: each test on its own values. Lifetime rule: nothing outlives a test.
@Suite struct LinePortHTTPAnswerTests {
    static func isRequestLine(_ line: String) -> Bool {
        Array(line.utf8).withUnsafeBytes { LinePortHTTPAnswer.isRequestLine($0) }
    }

    @Test func anHTTPRequestLineIsToldFromALineOfTheProtocol() {
        for line in [
            "GET /ws HTTP/1.1", "POST /pub/a HTTP/1.0", "OPTIONS * HTTP/1.1", "GET http://x/ HTTP/1.1",
            "PROPFIND /a%20b HTTP/1.1",
        ] {
            #expect(Self.isRequestLine(line), "\(line)")
        }
        for line in [
            #"{"op":"ping"}"#, "", "GET", "GET / HTTP/2.0", "GET / HTTP/1.x", "get / HTTP/1.1", "GET  HTTP/1.1",
            " GET / HTTP/1.1", "GET / HTTP/1.1 ", "G3T / HTTP/1.1", "PRI * HTTP/2.0", "HTTP/1.1",
        ] {
            #expect(!Self.isRequestLine(line), "\(line)")
        }
    }

    @Test func theAnswerSaysWhereHTTPIsServed() {
        let answer = LinePortHTTPAnswer.response(httpListeners: ["http_listen port 7456", "https_listen port 7444"])
        #expect(answer.status == .badRequest && answer.contentType?.description == "text/plain; charset=utf-8")
        let text = String(decoding: answer.body, as: UTF8.self)
        #expect(text.hasPrefix("This port speaks runnel's line protocol, not HTTP: one JSON request per line"))
        #expect(
            text.contains(
                "WebSocket (/ws) and Server-Sent Events (/events) are served on http_listen port 7456 and "
                    + "https_listen port 7444.\n"))
        let off = String(decoding: LinePortHTTPAnswer.response(httpListeners: []).body, as: UTF8.self)
        #expect(off.hasSuffix("This server serves no HTTP (http_listen is off).\n"))
    }
}
