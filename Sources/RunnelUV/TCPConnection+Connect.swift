import CLibUV
import Runnel

extension TCPConnection {
    /// Connects to `host` (a numeric IPv4 or IPv6 address) and `port`: sends the connection
    /// once it is established, then completes; fails with `UVError` if it cannot connect.
    /// The connection is delivered on the loop thread, not yet reading. Disposing before the
    /// connection is made closes it.
    public static func connect(
        host: String, port: Int, configuration: Configuration = .init(), on loop: EventLoop
    ) -> Signal<TCPConnection> {
        let scheduler = loop.scheduler
        return Signal.create { subscriber in
            let subscription = CompoundDisposable()
            scheduler.execute {
                guard !subscription.isDisposed else { return }
                do {
                    let address = try SocketAddress.make(host: host, port: port)
                    let connection = try TCPConnection(loop: scheduler, configuration: configuration)
                    subscription.add { connection.closeIfConnecting() }
                    try connection.startConnecting(to: address) { status in
                        if status < 0 {
                            connection.close()
                            subscriber.sendError(UVError(code: status, operation: "connect \(host):\(port)"))
                        } else {
                            connection.didConnect()
                            subscriber.sendNext(connection)
                            subscriber.sendCompleted()
                        }
                    }
                } catch {
                    subscriber.sendError(error)
                }
            }
            return subscription
        }
    }

    /// Starts `uv_tcp_connect`; `completion` gets its status on the loop thread.
    private func startConnecting(to address: sockaddr_storage, completion: @escaping (Int32) -> Void) throws {
        final class Pending {
            let connection: TCPConnection
            let completion: (Int32) -> Void
            init(_ connection: TCPConnection, _ completion: @escaping (Int32) -> Void) {
                self.connection = connection
                self.completion = completion
            }
        }
        // The request is retained through `request->data` until the connect callback (which
        // libuv also calls, cancelled, if the handle is closed first), and freed there.
        let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        request.pointee.data = Unmanaged.passRetained(Pending(self, completion)).toOpaque()
        isConnecting = true
        var address = address
        let status = withUnsafePointer(to: &address) { pointer in
            uv_tcp_connect(request, handle, runnel_storage_as_sockaddr(pointer)) { request, status in
                let pending = Unmanaged<Pending>.fromOpaque(request!.pointee.data).takeRetainedValue()
                request!.deallocate()
                pending.connection.isConnecting = false
                pending.completion(status)
            }
        }
        if status < 0 {
            isConnecting = false
            Unmanaged<Pending>.fromOpaque(request.pointee.data).release()
            request.deallocate()
            close()
            throw UVError(code: status, operation: "uv_tcp_connect")
        }
    }

    /// Closes a connection whose connect has not finished (the subscription was disposed).
    private func closeIfConnecting() {
        loop.execute { [self] in
            if isConnecting { close() }
        }
    }
}
