package main

import (
	"context"
	"fmt"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// A fork's tools in the demo's place: one read-only tool of its own,
// nothing of the note book's. forkcheck drops this file into
// functions/mcp and points newEndpoint at newForecast.

type forecastIn struct {
	City string `json:"city" jsonschema:"the city to forecast"`
}

type forecastOut struct {
	City    string `json:"city"`
	Summary string `json:"summary"`
	HighC   int    `json:"highC"`
}

func newForecast(cfg *endpoint.Config, o endpoint.Options) (*endpoint.Endpoint, error) {
	o.Implementation = stateless.Implementation{Name: "forecast", Title: "Forecast", Version: version}
	o.Instructions = "Forecasts the weather of a city."
	o.DefaultScopes = []string{"forecast:read"}
	ep, err := endpoint.New(cfg, o)
	if err != nil {
		return nil, err
	}
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "forecast", Description: "Tomorrow's weather in a city.",
		Scopes: []string{"forecast:read"}, Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *stateless.ToolRequest, in forecastIn) (*stateless.CallToolResult, forecastOut, error) {
			out := forecastOut{City: in.City, Summary: "sunny", HighC: 21}
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(fmt.Sprintf("%s: %s, %d°C", out.City, out.Summary, out.HighC))}}, out, nil
		})
	return ep, nil
}
