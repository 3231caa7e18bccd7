import RunnelTestSupport
import Testing

/// Many connections on one server, read from one thread with `poll()`.
@Suite struct ScaleTests {
    @Test func thousandSubscribersEachReceiveAThousandValuesInOrder() throws {
        let connections = 1000
        let values = 1000
        raiseOpenFileLimit(to: 4096)
        let server = try RunneldProcess()

        // Connect and subscribe in batches so the listen backlog never overflows.
        var clients: [BlockingTCPClient] = []
        for batchStart in stride(from: 0, to: connections, by: 100) {
            let batch = try (batchStart..<batchStart + 100).map { _ in try server.connect() }
            for (offset, client) in batch.enumerated() {
                try client.send(#"{"op":"sub","subject":"burst","sid":"s","ref":\#(batchStart + offset)}"#)
            }
            for (offset, client) in batch.enumerated() {
                #expect(try client.readJSON() == ["ok": true, "ref": .number(Double(batchStart + offset)), "sid": "s"])
            }
            clients += batch
        }

        let publisher = try server.connect()
        #expect(try publisher.publish("burst", -1) == connections)
        try publisher.sendRaw((0..<values).map { #"{"op":"pub","subject":"burst","value":\#($0)}"# + "\n" }.joined())

        var nextValue = [Int](repeating: -1, count: connections)  // -1: the first pub's value
        var failures = 0
        let deadline = Deadline(.seconds(60))
        while nextValue.contains(where: { $0 < values }) && !deadline.hasPassed && failures < 10 {
            for index in pollReadable(clients, timeout: .seconds(5)) {
                while let line = clients[index].bufferedLine() {
                    let expected = nextValue[index]
                    if line != #"{"ev":"next","sid":"s","value":\#(expected)}"#,
                        (try? JSON.parse(line)) != ["ev": "next", "sid": "s", "value": .number(Double(expected))]
                    {
                        failures += 1
                        Issue.record("connection \(index) expected value \(expected), got \(line)")
                    }
                    nextValue[index] += 1
                }
                if clients[index].isClosedByPeer && nextValue[index] < values {
                    failures += 1
                    Issue.record("connection \(index) closed after \(nextValue[index]) values")
                }
            }
        }
        let incomplete = nextValue.indices.filter { nextValue[$0] != values }
        #expect(incomplete.isEmpty, "\(incomplete.count) connections did not get all \(values) values")
        #expect(try publisher.stats()["connections"] == .number(Double(connections + 1)))
    }
}
