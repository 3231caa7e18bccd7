import RunnelBytes
import RunnelJSON

/// A subject's name with its JSON string form encoded once, shared by every event that
/// names it (pattern subscriptions' `"subject"`, expressions' `$subject`), and, for a named
/// subject, its epoch with the start of a `pos` member encoded once too. A map's key has a label
/// of its own (`init(key:of:)`): its subject's name, epoch and policy, and the key, which every
/// value written to the key carries through the stages. Immutable but for `slowConsumer`.
public final class SubjectLabel: Sendable {
    public let name: String
    /// `"name"` as a JSON string, quotes included.
    public let json: ByteBuffer
    /// A map's key, for a key's label; nil for a subject's own.
    public let key: String?
    /// `key` as a JSON string, quotes included.
    package let keyJSON: ByteBuffer?
    /// The label of the subject a key's label belongs to; nil for a subject's own.
    public let subjectLabel: SubjectLabel?
    /// The subject's epoch; nil for a label that names no subject (a pattern's text).
    public let epoch: String?
    /// `,"pos":"EPOCH:` for a subject's label: what comes before a value's seq in an event.
    package let positionPrefix: ByteBuffer?
    /// What `positionPrefix` starts with; `EPOCH:` follows it (`EventPosition.epochAndColon`).
    package static let positionKey: StaticString = ",\"pos\":\""
    /// The subject's own slow-consumer policy (`create`'s or its `[[subjects]]` table's
    /// `slow_consumer`); nil: the global one. Kept here, on what every delivered value carries,
    /// so a delivery over the soft limit finds it without a lookup. Loop thread only: set when
    /// the subject is created or the configuration reloaded, read by deliveries. A key's label
    /// reads its subject's.
    package var slowConsumer: SlowConsumerPolicy? {
        get { subjectLabel?.ownSlowConsumer ?? ownSlowConsumer }
        set { ownSlowConsumer = newValue }
    }
    private nonisolated(unsafe) var ownSlowConsumer: SlowConsumerPolicy?

    public init(_ name: String, epoch: String? = nil) {
        self.name = name
        self.epoch = epoch
        key = nil
        keyJSON = nil
        subjectLabel = nil
        var builder = JSONWriter()
        builder.writeString(name)
        self.json = builder.makeBuffer()
        positionPrefix = epoch.map { epoch in
            var prefix = JSONWriter(reservingCapacity: 10 + epoch.utf8.count)
            prefix.append(SubjectLabel.positionKey)
            prefix.append(raw: ByteBuffer(Array(epoch.utf8)))
            prefix.append(UInt8(ascii: ":"))
            return prefix.makeBuffer()
        }
    }

    /// The label of `key` in the map `subject` labels.
    public init(key: String, of subject: SubjectLabel) {
        name = subject.name
        epoch = subject.epoch
        json = subject.json
        positionPrefix = subject.positionPrefix
        self.key = key
        var builder = JSONWriter(reservingCapacity: key.utf8.count + 2)
        builder.writeString(key)
        keyJSON = builder.makeBuffer()
        subjectLabel = subject
    }

    /// The subject's own label: this one, or the one a key's label belongs to.
    public var subject: SubjectLabel { subjectLabel ?? self }
}
