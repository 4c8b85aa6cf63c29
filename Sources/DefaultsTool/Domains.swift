import ArgumentParser
import Foundation
import LiveDefaults

/// `defaults domains`.
struct Domains: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "domains", abstract: "List the domains, separated by commas.")

    func run() {
        emit(DefaultsLocations.current.persistentDomainNames().joined(separator: ", "))
    }
}
