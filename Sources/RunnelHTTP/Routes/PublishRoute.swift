import RunnelJSON
import RunnelProtocol
import RunnelServer

/// `POST /pub/SUBJECT`: publishes the body to SUBJECT (the rest of the path, percent-decoded),
/// through the same steps as the line protocol's `pub` (`Server.publishTarget(named:)`,
/// `Publishing.publish(_:to:in:counting:)`). The body is one JSON value
/// (`application/json` or no `Content-Type`) or, with `application/x-ndjson`, one value per
/// line, published as each line arrives. On a map (version 1.3), `?key=K` names the key the
/// values are written to, and `DELETE /pub/SUBJECT?key=K` removes it (`KeyRemovalBody`).
final class PublishRoute: HTTPRoute {
    static let prefix = "/pub/"
    let methods: [HTTPMethod] = [.post, .delete]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        let publication: Publication
        do throws(ProtocolError) {
            guard let name = PercentDecoding.decode(exchange.head.path.dropFirst(Self.prefix.count), plusIsSpace: false)
            else { throw ProtocolError(.badRequest, "the subject in the path is not valid percent-encoded UTF-8") }
            let key = exchange.query["key"]
            if let key { try MapKey.check(key) }
            guard exchange.head.method == .post || key != nil else {
                throw ProtocolError(.badRequest, "DELETE /pub/SUBJECT removes a map's key: it needs ?key=")
            }
            let target =
                if key != nil {
                    (entry: try server.mapTarget(named: name, for: exchange.checkedGrant), made: false)
                } else {
                    try server.publishTarget(named: name, for: exchange.checkedGrant)
                }
            if key == nil && target.entry.map != nil { throw Publishing.keyNeeded(target.entry) }
            publication = Publication(
                server: server, exchange: exchange, grant: exchange.checkedGrant, entry: target.entry,
                made: target.made, key: key)
        } catch {
            exchange.fail(HTTPFailure(error))
            return nil
        }
        if exchange.head.method == .delete { return KeyRemovalBody(publication) }
        switch Self.mediaType(exchange.head.field("content-type")) {
        case nil, "application/json":
            return SingleValueBody(publication)
        case "application/x-ndjson":
            return NDJSONBody(publication, maxLineBytes: server.config.maxLineBytes)
        default:
            exchange.fail(
                HTTPFailure(.badRequest, "Content-Type must be application/json or application/x-ndjson"))
            return nil
        }
    }

    /// The media type of a `Content-Type` value, lower-cased, without parameters.
    private static func mediaType(_ contentType: String?) -> String? {
        guard let contentType else { return nil }
        let type = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
        // A media type holds no spaces; any are the optional ones around it.
        return type.filter { $0 != " " && $0 != "\t" }.lowercased()
    }
}

/// One `POST /pub/SUBJECT` in progress: its subject, what it has published, and its answer,
/// which for a durable subject waits for the disk as the line protocol's reply does (with
/// `fsync = always`, once the values are on disk), for a subject the request made waits for
/// its making (in a cluster, its definition may lose to another node's), and waits while the
/// publication is paused (`backpressure`: a subscriber its values reached lags), so a client
/// that publishes one value per request is paused too. Loop thread only. Lifetime rule: its
/// body reader holds it; the laggards that paused it hold only its gate.
final class Publication {
    let exchange: HTTPExchange
    private unowned let server: Server
    private let name: String
    /// The rights of the request's token, checked again when the subject is looked up again.
    private let grant: TokenGrant
    private var entry: SubjectEntry
    private(set) var published = 0
    /// Whether a durable value was published, or the subject made: the answer then waits for
    /// the store.
    private(set) var waitsForStore: Bool
    /// This request as a publisher, for `backpressure`.
    private let gate: PublisherGate
    /// The map key the values are written to (`?key=`); nil for a subject of another kind.
    private let key: String?

    /// `made`: the request made the subject.
    init(server: Server, exchange: HTTPExchange, grant: TokenGrant, entry: SubjectEntry, made: Bool, key: String?) {
        self.server = server
        self.key = key
        self.waitsForStore = made
        self.grant = grant
        self.exchange = exchange
        self.entry = entry
        self.name = entry.name
        self.gate = PublisherGate(pauses: server.publisherPauses)
    }

    deinit { gate.close() }

    var maxDepth: Int { server.config.maxDepth }

    /// Publishes one value; returns the subject's subscribers just before (its receivers).
    @discardableResult
    func publish(_ value: RawJSON) throws(ProtocolError) -> Int {
        // The subject may have been deleted (and re-created) while a long body streamed in.
        if entry.isDeleted { entry = try target() }
        let receivers = entry.subscriberCount
        if let key {
            try Publishing.publish(
                value, key: key, to: entry, in: server.subjects, counting: server.stats,
                bounding: server.publishEvaluationBound, by: gate)
        } else {
            try Publishing.publish(
                value, to: entry, in: server.subjects, counting: server.stats, bounding: server.publishEvaluationBound,
                by: gate)
        }
        published += 1
        waitsForStore = waitsForStore || server.subjects.repliesWait(forValueOf: entry)
        return receivers
    }

    /// Removes the request's key from its map (`DELETE`); returns the map's subscribers just
    /// before.
    func removeKey() throws(ProtocolError) -> Int {
        guard let key else { preconditionFailure("a removal without a key") }
        if entry.isDeleted { entry = try target() }
        let receivers = entry.subscriberCount
        try Publishing.remove(
            key, from: entry, in: server.subjects, bounding: server.publishEvaluationBound, by: gate)
        waitsForStore = waitsForStore || server.subjects.repliesWait(forValueOf: entry)
        return receivers
    }

    /// The subject looked up again, as the request named it.
    private func target() throws(ProtocolError) -> SubjectEntry {
        guard key == nil else { return try server.mapTarget(named: name, for: grant) }
        let entry = try server.publishTarget(named: name, for: grant).entry
        if entry.map != nil { throw Publishing.keyNeeded(entry) }
        return entry
    }

    /// Whether a subscriber a value reached lags and paused it: nothing more is
    /// published, nor answered, until `whenResumed`.
    var isPaused: Bool { gate.isPaused }

    /// Runs `action` once the publication is not paused (at once when it is not).
    func whenResumed(_ action: @escaping () -> Void) { gate.whenResumed(action) }

    /// The subject's subscribers now.
    var subscriberCount: Int { entry.subscriberCount }

    /// Answers with `response()`, once what was published is on disk where answers wait for
    /// it; the disk's error instead, if writing failed.
    func answer(_ response: @escaping () -> HTTPResponse) {
        guard !gate.isPaused else {
            // Held strongly: the body reader that called may be gone by then.
            gate.whenResumed { self.answer(response) }
            return
        }
        guard waitsForStore, server.subjects.repliesWaitForDisk else {
            exchange.answer(response())
            return
        }
        let exchange = self.exchange
        server.subjects.whenWritten { error in
            exchange.answer(error.map { .failure(HTTPFailure($0)) } ?? response())
        }
    }

    /// Answers `error`, with how many values were published before it.
    func fail(_ error: ProtocolError) {
        let published = self.published
        answer { .failure(HTTPFailure(error)) { $0.member("published", integer: published) } }
    }
}
