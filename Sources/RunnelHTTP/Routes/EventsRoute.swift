import RunnelJSON
import RunnelProtocol
import RunnelServer

/// `GET /events?subject=S&...`: one subscription as Server-Sent Events. The query becomes
/// one `sub` request as a value (`SubscribeRequest`), as `runnel sub` would send it: the `StageShortcuts` (`filter`, `map`,
/// `throttle`, `take`), then the stages of `ops`; `from`, or the `Last-Event-ID` header, which wins;
/// `positions` for a single subject, so events carry `id:`; `conflate=true`, `ts=true`, `since` and `until` (version 1.3;
/// a reconnect's `Last-Event-ID` resumes by position instead of `since`). A session over an `SSETransport`
/// handles that request by the rules of a `sub` line, so subscribing, stages, resuming and the slow-consumer
/// policy are the line protocol's own. Only the query's own rules are checked here, and one
/// answer is given here: `204` for a reconnect right after the last value of an ended subject
/// (it would send nothing but the end, and a browser would reconnect for ever), asked of the
/// loop that owns the subjects when this one holds no replica of it (`Server.subjectHasEnded`).
final class EventsRoute: HTTPRoute {
    static let path = "/events"
    let methods: [HTTPMethod] = [.get]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        let request: SubscribeRequest
        do throws(ProtocolError) {
            request = try subscription(for: exchange)
        } catch {
            exchange.fail(HTTPFailure(error))
            return nil
        }
        guard let name = exchange.query["subject"], let from = from(exchange), let position = Position(parsing: from)
        else {
            stream(request, for: exchange)
            return nil
        }
        server.subjectHasEnded(name, at: position) { [self] hasEnded in
            guard !hasEnded else {
                return exchange.answer(HTTPResponse(status: .noContent, contentType: nil, body: []))
            }
            stream(request, for: exchange)
        }
        return nil
    }

    /// Answers `exchange` with the stream of `request`'s subscription.
    private func stream(_ request: SubscribeRequest, for exchange: HTTPExchange) {
        let stream = SSETransport(
            exchange: exchange, frontDoor: exchange.frontDoor, maxRequestBytes: server.config.maxLineBytes,
            wrapsValues: request.timestamps == true)
        // The front door checked the token (header or `?token=`); the `sub` checks its rights.
        server.openSession(over: stream, grant: exchange.checkedGrant)
        stream.subscribe(request, maxDepth: server.config.maxDepth)
    }

    /// Where the stream resumes: `Last-Event-ID` (a reconnecting browser's), else `from`.
    private func from(_ exchange: HTTPExchange) -> String? {
        if let lastEventID = exchange.head.field("last-event-id"), !lastEventID.isEmpty { return lastEventID }
        return exchange.query["from"]
    }

    /// The `sub` request the query asks for.
    private func subscription(for exchange: HTTPExchange) throws(ProtocolError) -> SubscribeRequest {
        let query = exchange.query
        guard let subject = query["subject"] else {
            throw ProtocolError(.badRequest, "query parameter 'subject' is required")
        }
        var throttle: Double?
        if let text = query["throttle"] {
            guard case .number(let seconds) = try? parse(text), seconds > 0, seconds.isFinite else {
                throw ProtocolError(.badRequest, "query parameter 'throttle' must be a number of seconds > 0")
            }
            throttle = seconds
        }
        var take: Int?
        if let text = query["take"] {
            guard case .number(let count) = try? parse(text), count >= 0, let integer = Int(exactly: count) else {
                throw ProtocolError(.badRequest, "query parameter 'take' must be an integer >= 0")
            }
            take = integer
        }
        var stages = StageShortcuts.stages(filter: query["filter"], map: query["map"], throttle: throttle, take: take)
        if let ops = query["ops"] {
            guard case .array(let extra) = try parse(ops) else {
                throw ProtocolError(.badRequest, "query parameter 'ops' must be a JSON array of stage objects")
            }
            stages += extra
        }
        let positions = SubjectPattern(subject).isWildcard ? nil : true
        let from = from(exchange)
        // A browser reconnects with the URL it began with: past the first connection, its
        // `Last-Event-ID` says where to go on, and `since` no longer applies.
        var since: Int64?
        if from == nil, let text = query["since"] { since = try SubscribeRequest.time("since", query: text) }
        var until: Int64?
        if let text = query["until"] { until = try SubscribeRequest.time("until", query: text) }
        return SubscribeRequest(
            subject: subject, sid: SSEFraming.sid, stages: stages,
            stagesByteCount: SubscribeRequest.encodedLength(of: stages), from: from, positions: positions,
            conflate: try flag("conflate", in: query), timestamps: try flag("ts", in: query), since: since,
            until: until)
    }

    /// The query's `name=true` or `name=false`; nil when absent.
    private func flag(_ name: String, in query: [String: String]) throws(ProtocolError) -> Bool? {
        guard let text = query[name] else { return nil }
        guard text == "true" || text == "false" else {
            throw ProtocolError(.badRequest, "query parameter '\(name)' must be true or false")
        }
        return text == "true"
    }

    /// A query parameter's JSON; `bad_json` when it is not JSON.
    private func parse(_ text: String) throws(ProtocolError) -> JSONValue {
        do {
            return try JSONParser(maxDepth: server.config.maxDepth).parse(text)
        } catch {
            throw ProtocolError(.badJSON, "invalid JSON in the query: \(error)")
        }
    }
}
