import Testing

@testable import RunnelServer

/// What a clustered node knows of the cluster's definitions (`ClusterDefinitions`): a name's
/// revision outlives its local entry being removed and made again (a definition in a new
/// epoch), and goes only with the key's deletion.
@Suite struct ClusterDefinitionsTests {
    @Test func aRevisionOutlivesTheEntryAndGoesWithTheKey() {
        var definitions = ClusterDefinitions()
        let first = ClusterDefinition(
            kind: .replay, capacity: 5, retainMilliseconds: nil, durable: false, initial: nil, epoch: "e1")
        definitions.read(revision: 7, of: "r")
        definitions["r"] = first
        #expect(definitions["r"]?.epoch == "e1" && definitions.revision(of: "r") == 7)
        // A definition in a new epoch: the entry goes and comes back; the revision is the change's.
        definitions.read(revision: 9, of: "r")
        definitions["r"] = nil
        #expect(definitions["r"] == nil && definitions.revision(of: "r") == 9)
        var renewed = first
        renewed.epoch = "e2"
        definitions["r"] = renewed
        #expect(definitions["r"]?.epoch == "e2" && definitions.revision(of: "r") == 9)
        definitions.deleted("r")
        #expect(definitions["r"] == nil && definitions.revision(of: "r") == nil)
    }
}
