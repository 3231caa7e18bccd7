import RunnelJSON
import RunnelProtocol
import RunnelServer

/// `POST /pub/SUBJECT`: publishes the body to SUBJECT (the rest of the path, percent-decoded),
/// through the same steps as the line protocol's `pub`, on the loop that owns the subjects
/// (`Server.publish(_:by:then:)`, which forwards from another loop). The body is one JSON value
/// (`application/json` or no `Content-Type`) or, with `application/x-ndjson`, one value per
/// line, published as the lines arrive. On a map (version 1.3), `?key=K` names the key the
/// values are written to, and `DELETE /pub/SUBJECT?key=K` removes it (`KeyRemovalBody`).
/// What needs no subject (the name, a reserved one, the token's rights) is checked before the
/// body is read; the rest (the subject's kind, `auto_create`, ...) with its first values.
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
            try server.checkPublish(to: name, for: exchange.checkedGrant)
            publication = Publication(server: server, exchange: exchange, subject: name, key: key)
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

/// One `POST /pub/SUBJECT` in progress: its subject, what it has published, and its answer.
/// Its values go out in batches (`PublishedBatch`), one at a time; the last batch's receipt
/// comes once the request's durable values are on disk where answers wait for it (with
/// `fsync = always`), or a subject it made is made (in a cluster, its definition may lose to
/// another node's). The answer also waits while the publication is paused (`backpressure`: a
/// subscriber its values reached lags, on any loop), so a client that publishes one value per
/// request is paused too. Loop thread only. Lifetime rule: its body reader holds it, and so
/// does a batch until its receipt comes; the laggards that paused it hold only its gate.
final class Publication {
    let exchange: HTTPExchange
    private unowned let server: Server
    private let subject: String
    /// The map key the values are written to (`?key=`); nil for a subject of another kind.
    private let key: String?
    /// The rights of the request's token, checked again as each batch is published.
    private let grant: TokenGrant
    private(set) var published = 0
    /// A value published so far waits for the store before the request is answered.
    private var waits = false
    /// The request's connection as a publisher, for `backpressure`.
    private let gate: PublisherGate

    init(server: Server, exchange: HTTPExchange, subject: String, key: String?) {
        self.server = server
        self.exchange = exchange
        self.subject = subject
        self.key = key
        self.grant = exchange.checkedGrant
        self.gate = exchange.publisherGate
    }

    var maxDepth: Int { server.config.maxDepth }

    /// Publishes `values` in order (none, with `isLast`, ends the request; `removesKey`, a
    /// `DELETE`'s removal of the key) and hands `then` the receipt, perhaps before returning;
    /// `published` counts what it says was published.
    func publish(
        _ values: [RawJSON], removesKey: Bool = false, isLast: Bool,
        then: @escaping (PublishedBatch.Receipt) -> Void
    ) {
        let batch = PublishedBatch(
            subject: subject, key: key, values: values, removesKey: removesKey, grant: grant, isLast: isLast,
            waits: waits)
        server.publish(batch, by: gate) { receipt in
            self.published += receipt.published
            self.waits = self.waits || receipt.waits
            then(receipt)
        }
    }

    /// Whether a subscriber a value reached lags and paused it: nothing more is
    /// published, nor answered, until `whenResumed`.
    var isPaused: Bool { gate.isPaused }

    /// Runs `action` once the publication is not paused (at once when it is not).
    func whenResumed(_ action: @escaping () -> Void) { gate.whenResumed(action) }

    /// Answers with `response()` once the publication is not paused.
    func answer(_ response: @escaping () -> HTTPResponse) {
        guard !gate.isPaused else {
            // Held strongly: the body reader that called may be gone by then.
            gate.whenResumed { self.answer(response) }
            return
        }
        exchange.answer(response())
    }

    /// Answers `error`, with how many values were published before it.
    func fail(_ error: ProtocolError) {
        let published = self.published
        answer { .failure(HTTPFailure(error)) { $0.member("published", integer: published) } }
    }
}
