// The smoke program's module: clients_test.go copies this folder into a scratch
// directory and generates the package ramanapi beside main.go. The
// requirements are those of the code oapi-codegen v2.8.2 generates, pinned.
module smoke

go 1.26

require (
	github.com/oapi-codegen/runtime v1.8.0
	go.yaml.in/yaml/v3 v3.0.4
)

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
)
