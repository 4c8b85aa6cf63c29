@testable import App
import Foundation
import Hummingbird
import HummingbirdTesting
import LiveDefaults
import LiveDefaultsTesting
import Testing

/// The server reconfigured by other processes, on a simulated machine: ops' `defaults write`, a person's editor, a
/// crash — each a few lines, no sleep, no real file.
@Suite("LiveServer on a simulated machine")
struct MachineTests {
    @Test("another process's change, an editor's save and a crashed writer, as the server's /hello sees them")
    func reconfiguredByOthers() async throws {
        let machine = SimulatedMachine(seed: 2026)
        let server = try #require(machine.process("server").defaults(suiteName: serverDomain))
        let ops = try #require(machine.process("ops").defaults(suiteName: serverDomain))
        let app = buildApplication(defaults: server, options: ServerOptions(port: 0))
        try await app.test(.router) { client in
            try await client.execute(uri: "/hello", method: .get) { response in
                #expect(response.status == .ok)
            }
            // Ops turn maintenance on from another process: the server follows once the machine settles.
            ops.set(true, forKey: "Maintenance")
            await machine.settle()
            try await client.execute(uri: "/hello", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
            }
            // A person edits the file and saves: maintenance off, a new greeting.
            let file = "\(machine.userDirectory)/\(serverDomain).plist"
            let edited = try PropertyListSerialization.data(
                fromPropertyList: ["Maintenance": false, "Greeting": "Edited by hand"], format: .xml, options: 0)
            machine.write(edited, to: file, as: .editor)
            await machine.settle()
            try await client.execute(uri: "/hello", method: .get) { response in
                #expect(response.status == .ok)
                let body = try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect(body?["greeting"] as? String == "Edited by hand")
            }
            // Ops set maintenance again and die before their writer wrote it: the server never sees it.
            ops.set(true, forKey: "Maintenance")
            machine.process("ops").crash()
            await machine.advance(by: .seconds(60))
            try await client.execute(uri: "/hello", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }
}
