/// What this node knows of the cluster's definitions (its key-value bucket): the definition each
/// local entry was made from, by name, and the bucket's revision of each name as its last change
/// read here said. A revision belongs to the bucket's key, not to an entry: an entry removed and
/// made again here (a definition arriving in a new epoch) keeps it, and only the key's deletion
/// forgets it, so a node can always renew a subject whose stream was lost (`renewIfLost`).
///
/// Thread rules: a value, owned by the clustered node's `ClusterDefinitionSync` on the first loop.
struct ClusterDefinitions {
    private var byName: [String: ClusterDefinition] = [:]
    private var revisions: [String: UInt64] = [:]

    /// The definition `name`'s local entry was made from; set when one is made, nil when it goes.
    subscript(name: String) -> ClusterDefinition? {
        get { byName[name] }
        set { byName[name] = newValue }
    }

    /// The bucket's revision of `name` as last read here; nil before any, or after its deletion.
    func revision(of name: String) -> UInt64? { revisions[name] }

    /// A change of `name` at `revision` was read from the bucket.
    mutating func read(revision: UInt64, of name: String) { revisions[name] = revision }

    /// `name` was deleted from the bucket.
    mutating func deleted(_ name: String) {
        byName[name] = nil
        revisions[name] = nil
    }
}
