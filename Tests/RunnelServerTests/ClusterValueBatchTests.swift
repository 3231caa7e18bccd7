import Testing

@testable import RunnelServer

/// The frames of the messages a clustered node sends into plain subjects (`ClusterValueBatch`):
/// a lone value as it is, several as framed values with `FIRST-COUNT`, and what a node never
/// sends refused whole (the receiver counts it missed). Batches cross real nodes in
/// Tests/blackbox/test_cluster.py.
@Suite struct ClusterValueBatchTests {
    private func framed(_ values: [String]) -> [UInt8] {
        var payload: [UInt8] = []
        for value in values {
            Array(value.utf8).withUnsafeBytes { ClusterValueBatch.appendFrame($0, to: &payload) }
        }
        return payload
    }

    private func strings(_ batch: ClusterValueBatch) -> [String] { batch.map { String(decoding: $0, as: UTF8.self) } }

    @Test func aLoneValueIsItsOwnPayload() throws {
        let (first, batch) = try #require(ClusterValueBatch.read(Array("{\"a\":1}".utf8), token: "17"))
        #expect(first == 17 && batch.count == 1 && strings(batch) == ["{\"a\":1}"])
        #expect(ClusterValueBatch.token(first: 17, count: 1) == "17")
    }

    @Test func aBatchIsItsValuesFramedInOrder() throws {
        let values = ["1", "\"two\"", "{\"three\":[3]}", String(repeating: "4", count: 70_000)]
        let payload = framed(values)
        #expect(Array(payload.prefix(5)) == [0, 0, 0, 1, UInt8(ascii: "1")])
        let token = ClusterValueBatch.token(first: 41, count: 4)
        #expect(token == "41-4")
        let (first, batch) = try #require(ClusterValueBatch.read(payload, token: token[...]))
        #expect(first == 41 && batch.count == 4 && strings(batch) == values)
    }

    @Test(arguments: [
        ("x", ["1"]), ("-2", ["1", "2"]), ("3-", ["1"]), ("3-1", ["1"]), ("3-2", ["1"]), ("3-2", ["1", "2", "3"]),
        ("3-x", ["1", "2"]),
    ])
    func whatANodeNeverSendsIsRefused(_ token: String, _ values: [String]) {
        #expect(ClusterValueBatch.read(framed(values), token: token[...]) == nil)
    }

    @Test func aFrameCutShortIsRefused() {
        let payload = framed(["1", "22"])
        #expect(ClusterValueBatch.read(Array(payload.dropLast()), token: "1-2") == nil)
        #expect(ClusterValueBatch.read(payload + [0, 0], token: "1-2") == nil)
        #expect(ClusterValueBatch.read(payload, token: "1-2")?.values.count == 2)
    }
}
