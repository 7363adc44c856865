// Package atollpb holds atoll's protobuf messages: everything that crosses
// a process boundary (task specs and results, object-store requests, GCS
// requests and tables, typed errors). The .proto files sit beside the
// generated code; `make proto` regenerates it.
package atollpb
