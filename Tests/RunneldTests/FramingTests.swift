import Testing

/// Line framing: blank lines, `\r\n`, requests split across or packed into writes.
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
}
