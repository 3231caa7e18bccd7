import CLibUV

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Builds and prints the IPv4/IPv6 socket addresses the TCP types use.
enum SocketAddress {
    /// The address of `host` (a numeric IPv4 or IPv6 address) and `port`.
    static func make(host: String, port: Int) throws -> sockaddr_storage {
        var storage = sockaddr_storage()
        let status: Int32
        if host.contains(":") {
            status = withUnsafeMutableBytes(of: &storage) { raw in
                uv_ip6_addr(host, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self))
            }
        } else {
            status = withUnsafeMutableBytes(of: &storage) { raw in
                uv_ip4_addr(host, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self))
            }
        }
        try UVError.check(status, "parsing address \(host)")
        return storage
    }

    /// The port of an IPv4 or IPv6 address.
    static func port(of storage: sockaddr_storage) -> Int {
        withUnsafePointer(to: storage) { pointer in
            if Int32(storage.ss_family) == AF_INET6 {
                return Int(UInt16(bigEndian: runnel_storage_as_in6(pointer).pointee.sin6_port))
            }
            return Int(UInt16(bigEndian: runnel_storage_as_in(pointer).pointee.sin_port))
        }
    }

    /// "192.0.2.1:80" or "[2001:db8::1]:80".
    static func describe(_ storage: sockaddr_storage) -> String {
        var name = [CChar](repeating: 0, count: 64)
        let isIPv6 = Int32(storage.ss_family) == AF_INET6
        withUnsafePointer(to: storage) { pointer in
            if isIPv6 {
                _ = uv_ip6_name(runnel_storage_as_in6(pointer), &name, name.count)
            } else {
                _ = uv_ip4_name(runnel_storage_as_in(pointer), &name, name.count)
            }
        }
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return isIPv6 ? "[\(host)]:\(port(of: storage))" : "\(host):\(port(of: storage))"
    }

    /// The local or remote address of an open TCP handle, or nil.
    static func of(
        _ handle: UnsafeMutablePointer<uv_tcp_t>,
        _ query: (UnsafePointer<uv_tcp_t>, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<Int32>) -> Int32
    ) -> sockaddr_storage? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            query(handle, runnel_mutable_storage_as_sockaddr(pointer), &length)
        }
        return status == 0 ? storage : nil
    }
}
