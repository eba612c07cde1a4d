package apidoctest_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/edgeindex/edgeindex/internal/apidoctest"
)

func ExampleRoutes() {
	text := "### POST /v1/lease → 200 Lease\n\nSee **GET /v1/seat?key=HOST/NODE** and **GET /readyz**.\n"
	fmt.Println(slices.Sorted(maps.Keys(apidoctest.Routes(text))))
	// Output: [GET /readyz GET /v1/seat POST /v1/lease]
}
