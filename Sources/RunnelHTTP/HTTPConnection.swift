import RunnelServer
import RunnelUV

/// One client's HTTP/1.1 connection: requests parsed from its bytes (`HTTPRequestParser`),
/// one at a time, each handed to the front door and answered before the next is read, so
/// answers go out in order (pipelined requests wait in `held`, the socket is not read
/// meanwhile). Keep-alive unless the client or an error says otherwise.
///
/// Time limits (checked by the server's sweep, `checkDeadline`): a request head must be
/// complete within `headTimeout` of its first byte, and a kept-alive connection, or a body,
/// may be idle for `idleTimeout`; past either it is closed.
///
/// Thread rules: loop thread only (libuv calls it there). Lifetime rule: the `ByteStream`
/// holds this object as its delegate until it has closed; the front door holds it in its
/// table meanwhile.
final class HTTPConnection: ByteStreamDelegate, HTTPRequestParserDelegate {
    static let headTimeout: Duration = .seconds(10)
    static let idleTimeout: Duration = .seconds(60)
    /// How long an answer that closes the connection may take to drain.
    static let closeTimeout: Duration = .seconds(5)

    let connection: any ByteStream
    private unowned let frontDoor: HTTPFrontDoor
    private let scheduler: LoopScheduler
    private var parser: HTTPRequestParser!
    /// The request being read or answered.
    private var exchange: HTTPExchange?
    private var bodyReader: (any HTTPBodyReader)?
    /// Whether the connection goes on after the current request's answer.
    private var keepsAlive = true
    /// A request has ended and its answer is not sent yet: input is held, not parsed.
    private var awaitingAnswer = false
    /// Inside `parse`: an answer given now is followed up by `parse` itself.
    private var isParsing = false
    /// Input read after a request that is not answered yet (at most one read's worth).
    private var held: [UInt8] = []
    /// Set once a stream has taken the connection over (`handOver`): nothing more is parsed.
    private var isHandedOver = false
    /// The stream that took the connection over: after an upgrade request's head, the bytes
    /// that came with it are the stream's (a WebSocket's first frames may).
    private var stream: (any HTTPStream)?
    /// When the connection is closed unless something happens first: the head's limit while
    /// one is read, the idle limit between requests and between pieces of a body; nil while a
    /// request's answer is on its way.
    private(set) var deadline: ContinuousClock.Instant?
    /// The connection as a publisher, for `backpressure`, made by its first `POST /pub`: one
    /// gate for all its requests, so a pause that comes after a request's answer (a lagging
    /// subscriber on another loop hears of the value later) holds the next request's answer.
    private var madePublisherGate: PublisherGate?

    init(connection: any ByteStream, frontDoor: HTTPFrontDoor, scheduler: LoopScheduler, maxBodyBytes: Int) {
        self.connection = connection
        self.frontDoor = frontDoor
        self.scheduler = scheduler
        deadline = .now + Self.idleTimeout
        parser = HTTPRequestParser(maxBodyBytes: maxBodyBytes, delegate: self)
    }

    func start() {
        connection.delegate = self
        connection.startReading()
    }

    /// Closes the connection once past its deadline.
    func checkDeadline(_ now: ContinuousClock.Instant) {
        guard let deadline, now >= deadline else { return }
        self.deadline = nil
        connection.close()
    }

    // MARK: Input

    func connection(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        scheduler.assertOnLoopThread()
        if awaitingAnswer {
            held.append(contentsOf: bytes)
            connection.stopReading()
            return
        }
        parse(bytes)
    }

    var publisherGate: PublisherGate {
        if let madePublisherGate { return madePublisherGate }
        let made = frontDoor.makePublisherGate()
        madePublisherGate = made
        return made
    }

    func connectionDidClose(_ connection: any ByteStream) {
        madePublisherGate?.close()
        deadline = nil
        bodyReader = nil
        // An unanswered exchange holds this connection: let it go (an answer still on its
        // way, a durable publish's, then goes nowhere).
        exchange = nil
        held = []
        frontDoor.connectionDidClose(self)
    }

    /// Parses `bytes` request by request while each is answered as soon as it ends; keeps the
    /// rest, and stops reading, when one is not.
    private func parse(_ bytes: UnsafeRawBufferPointer) {
        isParsing = true
        defer { isParsing = false }
        var rest = bytes
        while !rest.isEmpty && connection.isOpen && !isHandedOver {
            switch parser.consume(rest) {
            case .needsMore:
                return
            case .requestEnded(let consumed):
                if isHandedOver { return }
                rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
                if let exchange, !exchange.isAnswered {
                    awaitingAnswer = true
                    held.append(contentsOf: rest)
                    connection.stopReading()
                    return
                }
                endExchange()
            case .upgraded(let consumed):
                // A route that switched protocols has the connection, and what follows the head
                // is its. A refused upgrade was answered as any request, and since what follows
                // its head is not HTTP, the answer closes the connection (`keepsAlive` is off).
                let rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
                if let stream, !rest.isEmpty { stream.connection(connection, didRead: rest) }
                stream = nil
                return
            case .failed(let failure):
                keepsAlive = false
                if let exchange, exchange.isAnswered {
                    // Answered already (a refusal before its body): the body broke a limit.
                    connection.closeAfterFlush(timeout: Self.closeTimeout)
                } else if let reader = bodyReader {
                    bodyReader = nil
                    reader.abort(failure)
                } else if let exchange {
                    exchange.fail(failure)
                } else {
                    send(.failure(failure), for: nil)
                }
                return
            }
        }
    }

    private func endExchange() {
        exchange = nil
        deadline = .now + Self.idleTimeout
    }

    // MARK: Parser events

    func parserDidBeginRequest() {
        deadline = .now + Self.headTimeout
    }

    func parserDidReadHead(_ head: HTTPRequestHead) {
        deadline = head.hasBody ? .now + Self.idleTimeout : nil
        keepsAlive = head.keepsAlive && !head.isUpgrade
        (exchange, bodyReader) = frontDoor.begin(head, on: self)
    }

    func parserDidReadBody(_ bytes: UnsafeRawBufferPointer) {
        deadline = .now + Self.idleTimeout
        bodyReader?.read(bytes)
    }

    func parserDidEndRequest() {
        deadline = nil
        let reader = bodyReader
        bodyReader = nil
        reader?.finish()
    }

    /// Gives the connection to the stream `makeStream` makes of it, which answers the current
    /// request for as long as the connection lasts: nothing more is parsed (what the client
    /// sends next is the stream's), no time limit applies, and the front door counts it no
    /// more (the stream's session counts it). Returns the stream, or nil when the connection
    /// is closing already.
    func handOver<Stream: HTTPStream>(to makeStream: (any ByteStream) -> Stream) -> Stream? {
        isHandedOver = true
        deadline = nil
        bodyReader = nil
        exchange = nil
        held = []
        guard connection.isOpen else { return nil }
        let stream = makeStream(connection)
        self.stream = stream
        frontDoor.handOver(self, to: stream)
        connection.delegate = stream
        return stream
    }

    // MARK: Output

    /// Writes `response`, the answer to `exchange` (nil for a request that could not be read);
    /// then goes on with the input held meanwhile, or closes.
    func send(_ response: HTTPResponse, for exchange: HTTPExchange?) {
        scheduler.assertOnLoopThread()
        guard connection.isOpen else { return }
        let closing = !keepsAlive || exchange == nil || !frontDoor.isOpen
        let response = exchange.map { frontDoor.encode(response, answering: $0.head) } ?? response
        frontDoor.count(response)
        response.write(to: connection, closing: closing, withBody: exchange?.head.method != .head)
        if closing {
            connection.closeAfterFlush(timeout: Self.closeTimeout)
            return
        }
        // An answer given while parsing is seen by `parse` when its request ends.
        guard awaitingAnswer, !isParsing else { return }
        awaitingAnswer = false
        endExchange()
        let pending = held
        held.removeAll(keepingCapacity: true)
        pending.withUnsafeBytes { parse($0) }
        if !awaitingAnswer { connection.startReading() }
    }
}
