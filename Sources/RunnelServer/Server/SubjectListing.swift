import RunnelJSON
import RunnelProtocol

/// A subject as `list` and `GET /subjects` describe it, read on the subjects' own loop: a
/// value, so a list the owner makes for another loop's session is written there
/// (decision 0011). `subscribers` counts the subscriptions naming the subject on every loop.
///
/// Thread rules: a value, made on the store's loop (`list(of:prefix:for:)`). Lifetime rule:
/// holds the subject's label (immutable but for its policy, which is not read), nothing else.
package struct SubjectListing: Sendable {
    let label: SubjectLabel
    let kind: SubjectKind
    let capacity: Int?
    /// A replay subject's `retain_s`, or a map's `ttl_s`, in milliseconds.
    let retainMilliseconds: Int64?
    /// A map's live keys and `max_keys`.
    let keys: (count: Int, max: Int)?
    let subscribers: Int
    let published: UInt64
    let position: Position
    let isDurable: Bool
    let isTerminated: Bool

    init(_ entry: SubjectEntry) {
        label = entry.label
        kind = entry.kind
        capacity = entry.capacity
        retainMilliseconds = entry.retainMilliseconds
        keys = entry.map.map { (count: $0.count, max: $0.maxKeys) }
        subscribers = entry.namedSubscriptions + entry.replicaSubscribers.named
        published = entry.published
        position = entry.position
        isDurable = entry.isDurable
        isTerminated = entry.isTerminated
    }

    /// The subjects of `store` whose names start with `prefix` and that `grant` may subscribe
    /// or publish to, in the store's order; the server's own (`$sys.`) only when the prefix
    /// names them.
    static func list(of store: any SubjectStore, prefix: String, for grant: TokenGrant) -> [SubjectListing] {
        let reserved = SystemSubjects.isReserved(prefix)
        return store.list(prefix: prefix).lazy.filter {
            SystemSubjects.isReserved($0.name) == reserved && grant.mayList(SystemSubjects.rightsName(of: $0.name))
        }.map(SubjectListing.init)
    }
}

extension JSONWriter {
    /// The `list` reply's `subjects` array: one object per subject.
    package mutating func writeSubjectList(_ subjects: [SubjectListing]) {
        append("[")
        for (index, subject) in subjects.enumerated() {
            if index > 0 { append(",") }
            append("{\"subject\":")
            append(raw: subject.label.json)
            append(",\"kind\":")
            writeString(subject.kind.rawValue)
            if let capacity = subject.capacity {
                append(",\"capacity\":")
                writeInteger(capacity)
            }
            if let retainMilliseconds = subject.retainMilliseconds {
                append(subject.keys == nil ? ",\"retain_s\":" : ",\"ttl_s\":")
                writeNumber(RetainAge.seconds(milliseconds: retainMilliseconds))
            }
            if let keys = subject.keys {
                append(",\"keys\":")
                writeInteger(keys.count)
                append(",\"max_keys\":")
                writeInteger(keys.max)
            }
            append(",\"subscribers\":")
            writeInteger(subject.subscribers)
            append(",\"published\":")
            writeInteger(subject.published)
            append(",\"pos\":")
            writeString(subject.position.description)
            append(subject.isDurable ? ",\"durable\":true" : ",\"durable\":false")
            append(subject.isTerminated ? ",\"terminated\":true}" : ",\"terminated\":false}")
        }
        append("]")
    }
}
