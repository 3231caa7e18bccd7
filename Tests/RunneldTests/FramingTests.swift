import Testing

/// Line framing: blank lines, `\r\n`, requests split across or packed into writes; an HTTP
/// request sent to the line port.
@Suite struct FramingTests {
    @Test func blankLinesAreIgnoredAndCarriageReturnsAccepted() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.sendRaw("\n\n" + #"{"op":"ping","ref":1}"# + "\r\n\r\n\n" + #"{"op":"ping","ref":2}"# + "\n\r\n")
        #expect(try client.readJSON() == ["ok": true, "ref": 1])
        #expect(try client.readJSON() == ["ok": true, "ref": 2])
        client.expectNoLine(within: .milliseconds(200))
    }

    @Test func requestSplitAcrossManyWrites() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        for byte in Array((#"{"op":"ping","ref":"split"}"# + "\r\n").utf8) {
            try client.sendRaw([byte])
        }
        #expect(try client.readJSON() == ["ok": true, "ref": "split"])
    }

    @Test func whitespaceAroundTheObjectIsJSON() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        #expect(try client.request(#"  { "op" : "ping" , "ref" : 4 }  "#) == ["ok": true, "ref": 4])
    }

    @Test func connectionThatOnlySendsBlankLinesGetsNothing() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        try client.sendRaw("\n\r\n\n")
        client.expectNoLine(within: .milliseconds(200))
    }

    /// A browser or curl given the line port is answered once, in HTTP, with where HTTP is
    /// served, and the connection closed, rather than with one `bad_json` per header line.
    @Test func anHTTPRequestAsFirstLineIsAnsweredInHTTPAndClosed() throws {
        let server = try RunneldProcess()
        let httpPort = try #require(server.announcedPort("serving HTTP on"))
        let browser = try server.connect()
        try browser.sendRaw(
            "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        let answer = String(decoding: try #require(browser.readBytesUntilClosed()), as: UTF8.self)
        #expect(
            answer.hasPrefix("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"), "\(answer)")
        #expect(answer.contains("\r\nConnection: close\r\n"), "\(answer)")
        #expect(answer.contains("\r\n\r\nThis port speaks runnel's line protocol, not HTTP"), "\(answer)")
        #expect(answer.hasSuffix("are served on http_listen port \(httpPort).\n"), "\(answer)")
        #expect(!answer.contains("bad_json"), "\(answer)")
        // Split across writes, it is still the first line.
        let curl = try server.connect()
        try curl.sendRaw("POST /pub/a HT")
        try curl.sendRaw("TP/1.1\r\nContent-Length: 1\r\n\r\n1")
        let split = String(decoding: try #require(curl.readBytesUntilClosed()), as: UTF8.self)
        #expect(split.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(split)")
    }

    @Test func onlyTheFirstLineIsLookedAtForHTTP() throws {
        let server = try RunneldProcess()
        let client = try server.connect()
        #expect(try client.request(#"{"op":"ping","ref":1}"#) == ["ok": true, "ref": 1])
        try client.expectFailure("GET / HTTP/1.1", code: "bad_json", ref: nil, checkRef: false)
        #expect(try client.request(#"{"op":"ping","ref":2}"#) == ["ok": true, "ref": 2])
    }
}
